package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultRetryAfter is what a caller is told to wait when a provider is not
// running; the plugin host restarts it with a backoff starting at 1 s.
const defaultRetryAfter = 5 * time.Second

// writeStatus answers with a Kubernetes Status object, so kubectl-style
// clients and the portal parse proxy errors the same way as API errors.
// Errors are never cacheable.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(code),
	}
	if retry := w.Header().Get("Retry-After"); retry != "" {
		if s, err := strconv.Atoi(retry); err == nil {
			st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(s)}
		}
	}
	body, _ := json.Marshal(st) // a Status always marshals
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// writeUnavailable is the 503 for a provider that is loaded but not running.
func writeUnavailable(w http.ResponseWriter, name string, after time.Duration) {
	if after <= 0 {
		after = defaultRetryAfter
	}
	secs := int((after + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
		"provider "+strconv.Quote(name)+" is not running")
}

func writeNotFound(w http.ResponseWriter, name string) {
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
		"provider "+strconv.Quote(name)+" not found")
}
