package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/wharfhub/wharf/hub/apis/scheme"
)

// A limit inside the chain (the event rate) that notes its 429 as not
// held closes its connection; other answers keep theirs.
func TestRefusedAtOnceClosesThe429(t *testing.T) {
	s := scheme.NewCodecs(scheme.New())
	for _, tc := range []struct {
		name      string
		atOnce    bool
		code      int
		wantClose bool
	}{
		{"a 429 refused at once", true, http.StatusTooManyRequests, true},
		{"a 429 not noted", false, http.StatusTooManyRequests, false},
		{"a 403 after the note", true, http.StatusForbidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := WithState(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.atOnce {
					RefusedAtOnce(r.Context())
				}
				err := apierrors.NewTooManyRequestsError("limit reached")
				if tc.code == http.StatusForbidden {
					err = apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", nil)
				}
				responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, r)
			}), s)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/events", nil))
			if w.Code != tc.code {
				t.Fatalf("answered %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if got := w.Header().Get("Connection") == "close"; got != tc.wantClose {
				t.Errorf("Connection: close is %v, want %v", got, tc.wantClose)
			}
		})
	}
	RefusedAtOnce(context.Background()) // outside WithState: nothing to note, no panic
}
