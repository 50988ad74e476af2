package proxy

import (
	"net/http"
	"net/http/httputil"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// UIPrefix is the UI proxy's public route; the remainder maps to
// plugin.UIPrefix on the provider's socket.
const UIPrefix = "/ui/providers/"

// uiRequestHeaders are the only inbound headers the UI proxy forwards:
// content negotiation and conditional requests. Assets are the same for
// everyone, so no credential (Authorization, Cookie) or identity is sent,
// which is also what lets responses be cached as public.
var uiRequestHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language",
	"If-None-Match", "If-Modified-Since", "Range", "If-Range",
	"User-Agent",
}

// UI is the UI proxy, /ui/providers/<name>/*. File-like paths are assets
// from the provider; every other path is an SPA route and is served by the
// portal shell, so a hard refresh keeps the portal chrome.
type UI struct {
	providers Providers
	shell     http.Handler
	rp        *httputil.ReverseProxy
}

// NewUI returns the UI proxy; shell serves every non-asset path (nil: 404).
func NewUI(providers Providers, shell http.Handler) *UI {
	if shell == nil {
		shell = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "no portal shell")
		})
	}
	return &UI{
		providers: providers,
		shell:     shell,
		rp: &httputil.ReverseProxy{
			Transport:      dispatch{},
			BufferPool:     newBufferPool(),
			Rewrite:        rewriteUI,
			ModifyResponse: cacheAsset,
			ErrorHandler:   proxyError,
		},
	}
}

// fileLike reports whether the cleaned path's last segment looks like a
// file (contains a "."); a trailing slash means a directory-like route.
func fileLike(rest string) bool {
	if strings.HasSuffix(rest, "/") {
		return false
	}
	base := path.Base(rest)
	return base != "." && base != ".." && strings.Contains(base, ".")
}

func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, err := splitRoute(r.URL, UIPrefix)
	if err != nil || !fileLike(rt.rest) {
		u.shell.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "provider assets are read-only")
		return
	}
	t, ok := u.providers.Get(rt.name)
	if !ok {
		writeNotFound(w, rt.name)
		return
	}
	f := &forward{name: rt.name, route: rt, transport: t.Transport, retryAfter: t.RetryAfter}
	switch {
	case t.Remote != nil && !isHop(r):
		// Assets carry no identity, so the hop needs no assertion.
		f.remote, f.transport = t.Remote, t.Remote.Transport
	case t.Remote != nil, t.Transport == nil:
		writeUnavailable(w, rt.name, t.RetryAfter)
		return
	}
	u.rp.ServeHTTP(w, r.WithContext(withForward(r.Context(), f)))
}

// rewriteUI builds the asset request from the allowlist only.
func rewriteUI(pr *httputil.ProxyRequest) {
	f, _ := forwardFrom(pr.In.Context())
	pr.Out.URL = upstreamURL(plugin.UIPrefix, f.route, pr.In.URL.RawQuery)
	if f.remote != nil {
		pr.Out.URL = remoteURL(f.remote, UIPrefix, f.route, pr.In.URL.RawQuery)
	}
	pr.Out.Host = ""
	h := make(http.Header, len(uiRequestHeaders)+1)
	for _, k := range uiRequestHeaders {
		if v := pr.In.Header.Values(k); len(v) > 0 {
			h[k] = append([]string(nil), v...)
		}
	}
	if _, ok := h["User-Agent"]; !ok {
		// Keep net/http from adding its own.
		h["User-Agent"] = []string{""}
	}
	if f.remote != nil {
		// The holder sets the base path itself.
		h.Set(HopHeader, f.remote.From)
	} else {
		h.Set(sdk.HeaderBasePath, strings.TrimSuffix(UIPrefix, "/")+"/"+f.name)
	}
	pr.Out.Header = h
}
