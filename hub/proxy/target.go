package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/wharfhub/wharf/sdk"
)

// Target is how to reach one loaded provider.
type Target struct {
	// Transport dials the provider's socket (plugin.NewSocketTransport),
	// pooled and owned by the plugin host. Nil means the provider is loaded
	// but not running right now: callers get 503 with Retry-After.
	Transport http.RoundTripper
	// PublicPaths are the provider's backend prefixes (absolute, clean,
	// e.g. "/agent/") reached without authentication and without identity.
	PublicPaths []string
	// RetryAfter is the hint for a 503 while Transport is nil; zero means
	// a default of a few seconds.
	RetryAfter time.Duration
	// Remote, when set, is the other hub replica that runs this
	// replicas: single provider; requests are forwarded there and
	// Transport is ignored.
	Remote *Remote
}

// Providers looks up loaded providers. ok is false for a name the hub does
// not know (404).
type Providers interface {
	Get(name string) (t Target, ok bool)
}

// ProvidersFunc adapts a function to Providers.
type ProvidersFunc func(name string) (Target, bool)

// Get implements Providers.
func (f ProvidersFunc) Get(name string) (Target, bool) { return f(name) }

// route is a request path split under a /<kind>/providers/ prefix.
type route struct {
	name string
	// rest is the cleaned, decoded remainder, always starting with "/".
	rest string
	// rawRest is the escaped remainder to forward, or "" when the decoded
	// form is all that is needed.
	rawRest string
}

// splitRoute splits prefix+"<name>/<rest>". The remainder is cleaned so that
// what the proxy checks (public prefixes, file-likeness) is what it
// forwards; a trailing slash is kept because it is meaningful to a mux.
func splitRoute(u *url.URL, prefix string) (route, error) {
	rest, ok := strings.CutPrefix(u.Path, prefix)
	if !ok {
		return route{}, fmt.Errorf("path %q is not under %q", u.Path, prefix)
	}
	name, remainder, _ := strings.Cut(rest, "/")
	if name == "" {
		return route{}, fmt.Errorf("path %q names no provider", u.Path)
	}
	rt := route{name: name, rest: cleanPath("/" + remainder)}
	// Keep the escaped form only when it still means the same path, so that
	// e.g. %2F inside a segment survives but never bypasses cleaning.
	if u.RawPath != "" {
		if raw, ok := strings.CutPrefix(u.EscapedPath(), prefix+url.PathEscape(name)); ok {
			if dec, err := url.PathUnescape(raw); err == nil && dec == rt.rest && !strings.Contains(dec, "/.") {
				rt.rawRest = raw
			}
		}
	}
	return rt, nil
}

func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// upstreamURL is the socket URL; the host is a placeholder because the
// socket transport always dials the provider's socket.
func upstreamURL(socketPrefix string, rt route, rawQuery string) *url.URL {
	u := &url.URL{Scheme: "http", Host: "provider", Path: socketPrefix + strings.TrimPrefix(rt.rest, "/"), RawQuery: rawQuery}
	if rt.rawRest != "" {
		u.RawPath = socketPrefix + strings.TrimPrefix(rt.rawRest, "/")
	}
	return u
}

type forwardKey struct{}

// forward is what one request carries from ServeHTTP to the ReverseProxy's
// Rewrite, transport and error handler.
type forward struct {
	name       string
	route      route
	transport  http.RoundTripper
	retryAfter time.Duration
	identity   sdk.Identity
	// remote is the holder replica to forward to instead of the socket,
	// and assertion the signed identity sent along (none on public paths).
	remote    *Remote
	assertion string
	// originalPath is set on aggregated requests only (ServeAggregated,
	// or a verified hop carrying one): the client's path, asserted to the
	// provider as sdk.HeaderOriginalPath.
	originalPath string
	// delegation is an aggregated request's hub/fairness delegation, sent
	// to the provider as sdk.HeaderDelegation (WithDelegation).
	delegation string
	// hopped: the request came from another replica with a verified
	// assertion, so its X-Forwarded-* headers are the first hop's.
	hopped bool
	// code is the status sent to the caller, for metrics.
	code int
	// headers is when the provider's response headers arrived, for metrics;
	// zero when the proxy answered itself.
	headers time.Time
}

func withForward(ctx context.Context, f *forward) context.Context {
	return context.WithValue(ctx, forwardKey{}, f)
}

func forwardFrom(ctx context.Context) (*forward, bool) {
	f, ok := ctx.Value(forwardKey{}).(*forward)
	return f, ok && f != nil
}

// dispatch is the single RoundTripper behind each proxy: it uses the
// provider's pooled transport carried by the request, so one ReverseProxy
// serves every provider and none is built per request.
type dispatch struct{}

func (dispatch) RoundTrip(r *http.Request) (*http.Response, error) {
	f, ok := forwardFrom(r.Context())
	if !ok || f.transport == nil {
		return nil, errNoTransport
	}
	return f.transport.RoundTrip(r)
}

var errNoTransport = errors.New("proxy: request carries no provider transport")

// isProviderGone reports whether the provider's socket refused or vanished,
// or a connection to it was reset before any answer: the provider stopped
// or crashed between lookup and answer. That is a 503 with Retry-After,
// like a provider known to be down; the supervisor notices the exit only
// at its next poll, and a pooled connection to the dead process fails this
// way rather than at dial.
func isProviderGone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
