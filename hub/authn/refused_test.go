package authn

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
)

// Credentials a provider refused are charged to their client address as
// failed authentications (sixth outside review #6): past the budget the
// address's credentials not known good get 429 unevaluated; requests
// without a credential are not charged, and other addresses are not
// touched.
func TestThrottleRefused(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	th := NewThrottle(&ThrottleOptions{FailureRate: 1, FailureBurst: 2}, nil, "wharf_session", clk)
	served := 0
	h := th.WithThrottle(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), scheme.Codecs)
	req := func(addr, auth string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/services/providers/edges/agent/x/join", nil)
		r.RemoteAddr = addr + ":4444"
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return r
	}
	for range 5 {
		th.Refused(req("192.0.2.1", "")) // no credential: never charged
	}
	for _, tc := range []struct {
		addr, auth string
		want       int
	}{
		{"192.0.2.1", "Bearer bogus-1", http.StatusOK},
		{"192.0.2.1", "Bearer bogus-2", http.StatusOK},
		{"192.0.2.1", "Bearer bogus-3", http.StatusTooManyRequests},
		{"192.0.2.1", "", http.StatusOK},
		{"198.51.100.1", "Bearer bogus-4", http.StatusOK},
	} {
		r := req(tc.addr, tc.auth)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusOK {
			// The provider refused it.
			th.Refused(r)
		}
		if w.Code != tc.want {
			t.Errorf("%s with %q: %d, want %d", tc.addr, tc.auth, w.Code, tc.want)
		}
	}
}
