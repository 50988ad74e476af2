package proxy

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
)

// WithProviderRoutes serves the provider proxies in front of delegate (the
// hub's generic API handler chain) and passes every other path on.
//
// Provider routes deliberately bypass the generic chain: its
// non-long-running timeout would cut SSE and websockets, its RBAC
// authorizer knows nothing of these non-resource paths (the backend proxy
// checks workspace access itself), UI assets are loaded by browsers that
// send no bearer token, and public backend paths (agent tunnels) must be
// reached unauthenticated. Non-public backend requests are authenticated
// here with the hub's authenticator; Authorization is kept for the
// provider although upstream authentication deletes it.
func WithProviderRoutes(delegate http.Handler, backend *Backend, ui *UI, auth authenticator.Request, apiAuds authenticator.Audiences) http.Handler {
	authenticated := WithAuthorizationPreserved(
		genericfilters.WithAuthentication(backend.authenticated(), auth, http.HandlerFunc(unauthorized), apiAuds, nil))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, UIPrefix):
			ui.ServeHTTP(w, r)
		case strings.HasPrefix(r.URL.Path, BackendPrefix) && (backend.IsPublic(r) || len(r.Header.Values(AssertionHeader)) > 0):
			// Public paths need no caller; a request forwarded by another
			// replica is authenticated by its assertion, nothing else.
			backend.ServeHTTP(w, r)
		case strings.HasPrefix(r.URL.Path, BackendPrefix):
			authenticated.ServeHTTP(w, r)
		default:
			delegate.ServeHTTP(w, r)
		}
	})
}

// unauthorized replaces genericfilters.Unauthorized, which needs the
// RequestInfo that only the generic chain sets.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		// As upstream: an unauthenticated client may not keep an HTTP/2
		// connection open (CVE-2023-44487).
		w.Header().Set("Connection", "close")
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="wharf"`)
	writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
}
