package login

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// CSRFHeader carries the session's CSRF token on cookie-authenticated
// state-changing requests. The portal reads the token from /auth/session.
const CSRFHeader = "X-Wharf-CSRF"

// safeMethod: methods that must not change state, so need no CSRF check.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// WithCSRF refuses (403) a state-changing request that is authenticated
// by the session cookie unless it carries BOTH an Origin (or, without
// Origin, a Referer) of the hub's external URL AND the session's CSRF
// token in X-Wharf-CSRF. Bearer requests (any Authorization header) are
// not cookie requests and pass unchanged; so do requests with no or an
// invalid cookie, which authentication refuses later anyway. A
// cookie-authenticated protocol upgrade (websocket) needs both as well.
//
// Two independent checks because each has gaps alone: Origin is missing
// from some same-origin requests and can be stripped by privacy proxies
// (then we refuse, failing closed); a token alone would not stop a
// same-site sibling that learned it. SameSite=Lax already keeps the
// cookie off cross-site POSTs in current browsers; this does not rely on
// it.
func WithCSRF(delegate http.Handler, a *SessionAuthenticator, externalURL string) http.Handler {
	origin := originOf(externalURL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upgrade := r.Header.Get("Upgrade") != ""
		if safeMethod(r.Method) && !upgrade {
			delegate.ServeHTTP(w, r)
			return
		}
		s, ok, err := a.sessions.fromRequest(r, a.now())
		if !ok || err != nil {
			delegate.ServeHTTP(w, r)
			return
		}
		// A protocol upgrade (websocket) is a GET that opens a two-way
		// channel (exec, attach, port-forward, the edges' ssh pipe): a
		// write, so it needs the token like any other. Same origin alone
		// is not enough: provider scripts run in this origin (see
		// portal/doc.go) and a browser's WebSocket always sends the
		// cookie, so a hostile provider could otherwise exec into the
		// user's pods. Browsers cannot add the header to a WebSocket, so
		// in effect cookie-authenticated upgrades are refused; the shell
		// opens none, and kubectl and wharf send bearer tokens.
		tokenOK := tokenMatches(r.Header.Get(CSRFHeader), s.CSRF)
		if !sameOrigin(r, origin) || !tokenOK {
			klog.FromContext(r.Context()).V(2).Info("CSRF check failed", "method", r.Method, "path", r.URL.Path, "session", shortID(s.ID))
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
				"cross-site request refused: cookie-authenticated requests need a same-origin Origin and the "+CSRFHeader+" header")
			return
		}
		delegate.ServeHTTP(w, r)
	})
}

func tokenMatches(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sameOrigin compares the request's Origin, or the origin of its Referer
// when Origin is absent, with the hub's. Neither present: not same origin.
func sameOrigin(r *http.Request, origin string) bool {
	if o := r.Header.Get("Origin"); o != "" {
		return originOf(o) == origin
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return originOf(ref) == origin
	}
	return false
}

// originOf is scheme://host[:port] of u, lowercased, with the scheme's
// default port dropped; "" for anything else (including "null").
func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	scheme, host, port := strings.ToLower(p.Scheme), strings.ToLower(p.Hostname()), p.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}
