package authn

import (
	"context"
	"net/http"
	"path"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
)

// HealthPaths are kube-apiserver's health endpoints, the only paths a
// request without credentials may use: kubelet and load balancer probes
// read them without a token, as kube-apiserver's documented structured
// AuthenticationConfiguration allows (anonymous.conditions: /livez,
// /readyz, /healthz). Query parameters (?verbose, ?exclude=) are no part
// of the path and keep working.
func HealthPaths() []string { return []string{"/livez", "/readyz", "/healthz"} }

// IsHealthPath reports whether p is one of HealthPaths or a per-check
// sub-path of one (/readyz/etcd, /livez/ping) in clean form: no empty,
// "." or ".." segment and no trailing slash, so /readyz/../metrics,
// //readyz, /readyz/%2e%2e/metrics (decoded before this) and /readyz/ are
// not health paths.
func IsHealthPath(p string) bool {
	if path.Clean(p) != p {
		return false
	}
	for _, h := range HealthPaths() {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// AnonymousHealth says when a request may be anonymous. The zero value
// admits no request.
type AnonymousHealth struct {
	// SessionCookie is the browser session cookie's name: a request that
	// carries it presents a credential, valid or not.
	SessionCookie string
	// Explicit reports whether the request addressed a workspace
	// (/clusters/<x>/readyz, stripped to /readyz before authentication).
	// Such a request is never anonymous: anonymous callers address the
	// hub, not a workspace. Nil treats every request as explicit.
	Explicit func(context.Context) bool
}

// WithAnonymousHealth returns delegate followed by upstream's anonymous
// authenticator, composed as kube-apiserver composes them
// (union.NewFailOnError): a request whose credential the delegate rejects
// with an error stays 401; a request to a health path (IsHealthPath) is
// system:anonymous in group system:unauthenticated (never
// system:authenticated); every other request is unauthenticated, 401, as
// before.
//
// Upstream's conditions are exact paths. Sub-paths are anonymous too, so
// that the hub answers them as kube-apiserver (whose anonymous access
// covers every path by default) does: authorization, not authentication,
// refuses them, with 403 "system:anonymous cannot get path
// /readyz/etcd" (hub/server grants the three paths only, and the
// process-wide guard keeps sub-paths for hub administrators).
//
// Stricter than upstream, and so nothing more: only GET and HEAD (HEAD is
// then refused by authorization, as upstream's RBAC verb is "head"); only
// a request that presents no credential at all (no Authorization header,
// no session cookie, no client certificate: a credential the delegate
// does not recognise must not turn into anonymous access); and never with
// a /clusters/ prefix.
func WithAnonymousHealth(delegate authenticator.Request, a AnonymousHealth) authenticator.Request {
	// No conditions: the path is checked by admits (IsHealthPath).
	anon := anonymous.NewAuthenticator(nil)
	guarded := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		if !a.admits(r) {
			return nil, false, nil
		}
		return anon.AuthenticateRequest(r)
	})
	return requestunion.NewFailOnError(delegate, guarded)
}

// admits reports whether r may be anonymous.
func (a AnonymousHealth) admits(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || !IsHealthPath(r.URL.Path) {
		return false
	}
	if a.Explicit == nil || a.Explicit(r.Context()) {
		return false
	}
	return !hasCredential(r, a.SessionCookie)
}

// hasCredential reports whether r presents anything that could identify
// a caller. It runs after the delegate, which deletes an accepted
// Authorization header, but then the delegate succeeded and this is
// never asked.
func hasCredential(r *http.Request, sessionCookie string) bool {
	if len(r.Header.Values("Authorization")) > 0 {
		return true
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return true
	}
	if sessionCookie != "" {
		if _, err := r.Cookie(sessionCookie); err == nil {
			return true
		}
	}
	return false
}
