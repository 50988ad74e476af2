package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/proxybody"
)

// forwarder sends requests to the downstream with the provider's own
// credential: either impersonating the caller (the downstream's RBAC
// decides) or as the provider itself (filtered reads the core has already
// decided to allow). It is the only place that talks HTTP to the downstream.
type forwarder struct {
	core *Core
	base *url.URL
	rt   http.RoundTripper // provider credential; HTTP/2 allowed; releases the client body (sdk/proxybody)
	rt11 http.RoundTripper // the same, HTTP/1.1 only: SPDY upgrades need it
	// proxy is the ReverseProxy behind proxybody.Handler: kube-apiserver
	// refuses a write on its headers, and the client's HTTP/2 body must
	// then be released or the answer never ends (see sdk/proxybody).
	proxy  http.Handler
	client *http.Client
}

type forwardMode int

const (
	modeImpersonate forwardMode = iota
	modeProvider
)

type forwardKey struct{}

type forwardState struct {
	mode   forwardMode
	caller Caller
	// notFound is set for requests the create-if-missing rule may turn
	// from 403 into 404.
	notFound *notFoundCandidate
}

func newForwarder(cfg *rest.Config) (*forwarder, error) {
	host := cfg.Host
	if !strings.Contains(host, "://") {
		// rest.Config allows a bare host:port; it means HTTPS.
		host = "https://" + host
	}
	base, err := url.Parse(host)
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("downstream host %q is not a URL", cfg.Host)
	}
	// Impersonation is set per request by us, never from the config.
	pcfg := rest.CopyConfig(cfg)
	pcfg.Impersonate = rest.ImpersonationConfig{}
	rt, err := rest.TransportFor(pcfg)
	if err != nil {
		return nil, fmt.Errorf("downstream transport: %w", err)
	}
	cfg11 := rest.CopyConfig(pcfg)
	cfg11.TLSClientConfig.NextProtos = []string{"http/1.1"}
	rt11, err := rest.TransportFor(cfg11)
	if err != nil {
		return nil, fmt.Errorf("downstream transport (HTTP/1.1): %w", err)
	}
	f := &forwarder{base: base, rt: proxybody.Transport(rt), rt11: rt11, client: &http.Client{Transport: rt}}
	f.proxy = proxybody.Handler(&httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		Transport:      roundTripperFunc(f.roundTrip),
		ModifyResponse: f.modifyResponse,
		ErrorHandler:   f.errorHandler,
		FlushInterval:  -1, // watches and log follows stream
	})
	return f, nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (f *forwarder) roundTrip(r *http.Request) (*http.Response, error) {
	if httpstream.IsUpgradeRequest(r) {
		// The answer is a connection (101), not a body to wrap.
		return f.rt11.RoundTrip(r)
	}
	return f.rt.RoundTrip(r)
}

// forward sends the request impersonating the caller: the downstream's
// RBAC decides.
func (c *Core) forward(w http.ResponseWriter, r *http.Request, caller Caller) {
	st := &forwardState{mode: modeImpersonate, caller: caller}
	if info, ok := request.RequestInfoFrom(r.Context()); ok {
		st.notFound = notFoundCandidateFor(r, info)
	}
	c.fwd.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, st)))
}

// forwardAsProvider sends the request with the provider's own credential.
// Callers must have decided already that the caller may see the answer;
// the downstream's audit log shows only the provider, so the caller is
// logged here.
func (c *Core) forwardAsProvider(w http.ResponseWriter, r *http.Request, caller Caller) {
	logProviderRead(r, caller)
	st := &forwardState{mode: modeProvider, caller: caller}
	c.fwd.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, st)))
}

func logProviderRead(r *http.Request, caller Caller) {
	klog.InfoS("tenant filter: read with the provider's credential", "user", caller.User, "method", r.Method, "path", r.URL.Path)
}

func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	st, _ := pr.In.Context().Value(forwardKey{}).(*forwardState)
	out := pr.Out
	out.URL = f.downstreamURL(pr.In.URL.Path, pr.In.URL.RawQuery)
	out.Host = ""
	stripCredentials(out.Header)
	if st != nil && st.mode == modeImpersonate {
		f.core.setImpersonation(out.Header, st.caller)
	}
}

// stripCredentials removes everything by which a client could speak for
// someone: its own credential, impersonation headers the front end did not
// approve (an approved impersonation is already the Caller), and identity
// headers an authenticating proxy would trust.
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	for k := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "impersonate-") || strings.HasPrefix(lk, "x-remote-") || strings.HasPrefix(lk, "x-kedge-") {
			h.Del(k)
		}
	}
}

// setImpersonation asserts the caller, with its groups filtered by
// --impersonation-group-regexp and then --ignored-impersonation-group.
func (c *Core) setImpersonation(h http.Header, caller Caller) {
	h.Set("Impersonate-User", caller.User)
	if caller.UID != "" {
		h.Set("Impersonate-Uid", caller.UID)
	}
	for _, g := range c.impersonationGroups(caller.Groups) {
		h.Add("Impersonate-Group", g)
	}
}

func (c *Core) impersonationGroups(groups []string) []string {
	var out []string
	for _, g := range groups {
		if c.groupRe != nil && !c.groupRe.MatchString(g) {
			continue
		}
		if contains(c.opts.IgnoredImpersonationGroups, g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func (f *forwarder) modifyResponse(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(forwardKey{}).(*forwardState)
	if st == nil || st.notFound == nil || resp.StatusCode != http.StatusForbidden {
		return nil
	}
	return f.core.maybeNotFound(resp, st.notFound)
}

func (f *forwarder) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the client went away
	}
	klog.V(1).InfoS("tenant filter: downstream request failed", "path", r.URL.Path, "err", err)
	writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
}

// do sends one request with the provider's credential (no impersonation)
// and returns the response for the caller to filter.
func (f *forwarder) do(ctx context.Context, method, path, rawQuery string, hdr http.Header, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, f.downstreamURL(path, rawQuery).String(), body)
	if err != nil {
		return nil, fmt.Errorf("downstream request: %w", err)
	}
	for _, k := range []string{"Accept", "Content-Type", "User-Agent"} {
		if v := hdr.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downstream %s %s: %w", method, path, err)
	}
	return resp, nil
}

// fetch is do for a handler, at the request's own path: it reads the
// whole answer (up to maxBody) and closes it. When the downstream cannot
// be reached or read it has answered the client 503, never the transport's
// error (which may name internal addresses), and reports false.
func (c *Core) fetch(w http.ResponseWriter, r *http.Request, method, rawQuery string, hdr http.Header, body io.Reader) (*http.Response, []byte, bool) {
	resp, err := c.fwd.do(r.Context(), method, r.URL.Path, rawQuery, hdr, body)
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return nil, nil, false
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return nil, nil, false
	}
	return resp, out, true
}

func singleJoin(a, b string) string {
	switch {
	case a == "" || a == "/":
		return b
	case strings.HasSuffix(a, "/") && strings.HasPrefix(b, "/"):
		return a + b[1:]
	case !strings.HasSuffix(a, "/") && !strings.HasPrefix(b, "/"):
		return a + "/" + b
	}
	return a + b
}
