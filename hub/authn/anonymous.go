package authn

import (
	"context"
	"net/http"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
)

// HealthPaths are the only paths a request without credentials may use:
// kube-apiserver's health endpoints, as its documented structured
// AuthenticationConfiguration enables anonymous access for probes
// (anonymous.conditions: /livez, /readyz, /healthz). Conditions are exact
// paths, as upstream's: per-check sub-paths (/readyz/etcd) describe the
// hub process and stay for hub administrators, query parameters (?verbose,
// ?exclude=) are no part of the path and keep working.
func HealthPaths() []string { return []string{"/livez", "/readyz", "/healthz"} }

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
// authenticator with HealthPaths as its conditions, as kube-apiserver
// composes them (union.NewFailOnError): a request whose credential the
// delegate rejects with an error stays 401, an anonymous one to a health
// path is system:anonymous in group system:unauthenticated (never
// system:authenticated), every other one is unauthenticated as before.
//
// Stricter than upstream, and so "nothing more": only GET and HEAD, only a
// request that presents no credential at all (no Authorization header, no
// session cookie, no client certificate: a credential the delegate merely
// does not recognise must not turn into anonymous access), and never with
// a /clusters/ prefix. Paths match exactly, after Go's percent-decoding,
// so /readyz/../metrics, //readyz, /readyz/%2e%2e/metrics and /readyz/
// are not health paths.
func WithAnonymousHealth(delegate authenticator.Request, a AnonymousHealth) authenticator.Request {
	var conds []apiserver.AnonymousAuthCondition
	for _, p := range HealthPaths() {
		conds = append(conds, apiserver.AnonymousAuthCondition{Path: p})
	}
	anon := anonymous.NewAuthenticator(conds)
	guarded := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		if !a.admits(r) {
			return nil, false, nil
		}
		return anon.AuthenticateRequest(r)
	})
	return requestunion.NewFailOnError(delegate, guarded)
}

// admits reports whether r may be anonymous at all; upstream's
// authenticator then checks the path.
func (a AnonymousHealth) admits(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
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
