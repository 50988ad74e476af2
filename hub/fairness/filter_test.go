package fairness

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// held is a handler that keeps each request in flight until released,
// like a slow request body does.
type held struct {
	entered chan struct{}
	release chan struct{}
}

func (h held) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.entered <- struct{}{}
	<-h.release
	w.WriteHeader(http.StatusCreated)
}

func checkTooMany(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if got := w.Header().Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After %q, want 1", got)
	}
	var st metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("not a Status: %v: %s", err, w.Body)
	}
	if st.Kind != "Status" || st.Code != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests || st.Message != Message {
		t.Fatalf("Status %+v", st)
	}
}
