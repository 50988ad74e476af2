package proxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"syscall"

	"github.com/wharfhub/wharf/hub/replicas"
	"github.com/wharfhub/wharf/sdk"
)

// HopHeader marks a request one hub replica forwarded to another; its
// value is the sender's replica name. It only prevents forwarding loops
// (a forwarded request is never forwarded again), so it carries no trust:
// a client that sets it merely gets a 503 instead of a forward.
const HopHeader = "X-Wharf-Replica-Hop"

// AssertionHeader carries the signed identity on a forwarded backend
// request; see package replicas.
const AssertionHeader = replicas.AssertionHeader

// Remote is another hub replica that runs a replicas: single provider.
type Remote struct {
	// Replica is the holder's name: the audience of the assertion.
	Replica string
	// URL is the holder's internal base URL (https).
	URL *url.URL
	// Transport reaches the holder: pooled, one per holder, verifying its
	// certificate against the CA it registered.
	Transport http.RoundTripper
	// From is this (the forwarding) replica's name, sent in HopHeader.
	From string
}

// Hop signs the identity a replica forwards and verifies the one it
// receives; *replicas.Asserter implements it.
type Hop interface {
	Sign(to string, b replicas.Binding, id sdk.Identity) (string, error)
	Verify(value string, b replicas.Binding) (sdk.Identity, error)
}

// hopHeaders are never passed to a provider nor copied onto a hop; only
// the proxy itself sets them on an outbound hop.
var hopHeaders = []string{HopHeader, AssertionHeader, OriginalPathHopHeader}

// stripHop deletes the hop headers and any Connection token naming them,
// in any case.
func stripHop(h http.Header) {
	for _, k := range hopHeaders {
		delete(h, k)
	}
	for k := range h {
		for _, hk := range hopHeaders {
			if strings.EqualFold(k, hk) {
				delete(h, k)
			}
		}
	}
	conn := h.Values("Connection")
	if len(conn) == 0 {
		return
	}
	var keep []string
	for _, v := range conn {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			named := false
			for _, hk := range hopHeaders {
				if strings.EqualFold(tok, hk) {
					named = true
				}
			}
			if tok != "" && !named {
				keep = append(keep, tok)
			}
		}
	}
	if len(keep) == 0 {
		h.Del("Connection")
		return
	}
	h[textproto.CanonicalMIMEHeaderKey("Connection")] = []string{strings.Join(keep, ", ")}
}

// isHop reports whether r arrived from another replica (or claims to).
func isHop(r *http.Request) bool {
	return len(r.Header.Values(HopHeader)) > 0 || len(r.Header.Values(AssertionHeader)) > 0
}

// binding is what an assertion is bound to: the same on both replicas,
// because both clean the path the same way.
func binding(r *http.Request, rt route) replicas.Binding {
	return replicas.Binding{Provider: rt.name, Method: r.Method, Path: rt.rest, Query: r.URL.RawQuery}
}

// remoteURL is the holder's URL for the same public route.
func remoteURL(rm *Remote, prefix string, rt route, rawQuery string) *url.URL {
	base := strings.TrimSuffix(rm.URL.Path, "/")
	u := &url.URL{Scheme: rm.URL.Scheme, Host: rm.URL.Host, Path: base + prefix + rt.name + rt.rest, RawQuery: rawQuery}
	if rt.rawRest != "" {
		u.RawPath = base + prefix + url.PathEscape(rt.name) + rt.rawRest
	}
	return u
}

// rewriteHop prepares a backend request for the holder: no X-Kedge-*
// header at all (the holder asserts them from the assertion), the signed
// assertion when there is an identity, and the loop marker.
func rewriteHop(pr *httputil.ProxyRequest, f *forward) {
	pr.Out.URL = remoteURL(f.remote, BackendPrefix, f.route, pr.In.URL.RawQuery)
	pr.Out.Host = ""
	sdk.StripIdentity(pr.Out.Header)
	stripHop(pr.Out.Header)
	// The caller is authenticated here; the holder needs no browser
	// session (and strips it before the provider anyway).
	stripHubCredentials(pr.Out.Header)
	if f.originalPath != "" {
		// Aggregated: the caller's credentials go nowhere, the holder
		// needs only the assertion and the original path it binds.
		rewriteAggregated(pr, f)
		pr.Out.Header.Del(sdk.HeaderOriginalPath)
		pr.Out.Header.Del(sdk.HeaderDelegation)
		pr.Out.Header.Set(OriginalPathHopHeader, f.originalPath)
	} else {
		restoreAuthorization(pr.In.Context(), pr.Out.Header)
	}
	if f.assertion != "" {
		pr.Out.Header.Set(AssertionHeader, f.assertion)
	}
	pr.Out.Header.Set(HopHeader, f.remote.From)
}

// isConnError reports a connection to a holder replica that broke before
// an answer: the replica died (or restarted) under a pooled connection.
// Like a refused dial, that is a 503 with Retry-After: another replica is
// about to hold the provider.
func isConnError(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// keepForwarded restores what the first replica saw of the client on a
// verified hop: ReverseProxy drops inbound X-Forwarded-* headers, which is
// right for clients but would make the first replica look like the
// caller. Only called after the assertion verified, so a client cannot
// plant them.
func keepForwarded(pr *httputil.ProxyRequest) {
	in, out := pr.In.Header, pr.Out.Header
	if prior := in.Values("X-Forwarded-For"); len(prior) > 0 {
		chain := strings.Join(prior, ", ")
		if v := out.Get("X-Forwarded-For"); v != "" {
			chain += ", " + v
		}
		out.Set("X-Forwarded-For", chain)
	}
	for _, k := range []string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v := in.Get(k); v != "" {
			out.Set(k, v)
		}
	}
}
