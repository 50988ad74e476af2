package testkit

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// portalShell stands in for the portal's SPA shell on non-file UI paths.
const portalShell = "<!doctype html><title>wharf portal shell (testkit)</title>"

// newFront is the stand-in's router: the hub's UI and backend proxies,
// reduced to the contract a provider can observe.
func newFront(d *plugin.Descriptor, users map[string]sdk.Identity, tr http.RoundTripper) http.Handler {
	uiBase := "/ui/providers/" + d.Name
	backendBase := "/services/providers/" + d.Name
	mux := http.NewServeMux()
	mux.Handle(uiBase+"/", uiProxy(uiBase, tr))
	mux.Handle(backendBase+"/", backendProxy(backendBase, d.PublicPaths, users, tr))
	return mux
}

func uiProxy(base string, tr http.RoundTripper) http.Handler {
	rp := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.Path, base+"/")
			pr.Out.URL = socketURL(plugin.UIPrefix+rest, pr.In.URL.RawQuery)
			pr.Out.Host = ""
			// Assets only: no credentials and no identity travel this way.
			sdk.StripIdentity(pr.Out.Header)
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Set(sdk.HeaderBasePath, base)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(path.Base(r.URL.Path), ".") {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(portalShell))
			return
		}
		rp.ServeHTTP(w, r)
	})
}

type identityKey struct{}

func backendProxy(base string, public []string, users map[string]sdk.Identity, tr http.RoundTripper) http.Handler {
	rp := &httputil.ReverseProxy{
		Transport:     tr,
		FlushInterval: -1, // stream: SSE and long polls must not buffer
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.Path, base+"/")
			pr.Out.URL = socketURL(plugin.BackendPrefix+rest, pr.In.URL.RawQuery)
			pr.Out.Host = ""
			// Rewrite already dropped hop-by-hop headers, including any
			// named in Connection; SetIdentity strips the rest in any case
			// and asserts the verified identity (none on public paths).
			id, _ := pr.In.Context().Value(identityKey{}).(sdk.Identity)
			sdk.SetIdentity(pr.Out.Header, id)
			// Authorization is forwarded untouched (Rewrite keeps it).
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := "/" + strings.TrimPrefix(r.URL.Path, base+"/")
		var id sdk.Identity
		if !isPublic(rest, public) {
			var ok bool
			id, ok = users[bearer(r)]
			if !ok || id.User == "" {
				w.Header().Set("WWW-Authenticate", "Bearer")
				http.Error(w, "testkit: unknown or missing bearer token", http.StatusUnauthorized)
				return
			}
		}
		ctx := r.Context()
		if id.User != "" {
			ctx = contextWithIdentity(ctx, id)
		}
		rp.ServeHTTP(w, r.WithContext(ctx))
	})
}

func isPublic(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// socketURL builds the upstream URL; the host is a placeholder because the
// transport always dials the socket.
func socketURL(p, rawQuery string) *url.URL {
	return &url.URL{Scheme: "http", Host: "provider", Path: p, RawQuery: rawQuery}
}
