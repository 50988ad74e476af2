package edges

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/sdk"
)

// tunnelHost is the Host of requests inside a tunnel. The agent forwards
// to its own target whatever this says; it only has to be a valid name.
const tunnelHost = "edge.tunnel"

// serveK8s proxies {EgressBase}/k8s/<api path> to the edge cluster's API
// server through the agent, as the caller (HeaderEdgeUser/Group) and never
// with the caller's hub credential.
func (e *Egress) serveK8s(w http.ResponseWriter, r *http.Request) {
	_, t, err := e.open(r, v1alpha1.TypeKubernetes)
	if err != nil {
		logDenial(r, err)
		writeStatus(w, r, err)
		return
	}
	suffix, ok := k8sSuffix(r)
	if !ok {
		writeStatus(w, r, apierrors.NewNotFound(schemaEdges, r.PathValue("name")))
		return
	}
	unescaped, err := url.PathUnescape(suffix)
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("invalid path"))
		return
	}
	id, _ := sdk.IdentityFrom(r)
	name := r.PathValue("name")
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Rewrite (unlike Director) runs after the hop-by-hop and
			// X-Forwarded-* headers are gone, and adds none of its own.
			pr.Out.URL = &url.URL{Scheme: "http", Host: tunnelHost, Path: unescaped, RawPath: suffix, RawQuery: pr.In.URL.RawQuery}
			pr.Out.Host = ""
			setEdgeHeaders(pr.Out.Header, id)
		},
		// An edge is run by a workspace admin, who must not be able to set
		// cookies on the hub's origin in a user's browser, nor run script
		// there: any page the edge serves (its own, or any pod's through
		// the API server's services/proxy) would otherwise execute as the
		// hub's origin, read /auth/session's CSRF token and act with the
		// visitor's session in every workspace. A sandboxed document has
		// an opaque origin and no scripts; kubectl ignores the header.
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Del("Set-Cookie")
			if resp.StatusCode != http.StatusSwitchingProtocols {
				resp.Header.Set("Content-Security-Policy", "sandbox")
				resp.Header.Set("X-Content-Type-Options", "nosniff")
			}
			return nil
		},
		Transport:     e.transport(t),
		FlushInterval: -1, // watches and logs stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the client left
			}
			klog.FromContext(r.Context()).V(2).Info("Edge egress failed", "cluster", r.PathValue("cluster"), "edge", name, "err", err.Error())
			writeStatus(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach edge %q", name)))
		},
	}
	rp.ServeHTTP(w, r)
}

// transport returns the pooled transport of tunnel t, creating it on first
// use. It is dropped, and its idle connections closed, when t dies, so a
// reconnected agent never gets a request on its predecessor's connections.
func (e *Egress) transport(t Tunnel) *http.Transport {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tr, ok := e.transports[t]; ok {
		return tr
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return e.dial(ctx, t, v1alpha1.TypeKubernetes)
		},
		// Bodies pass through as the edge sent them; the transport must
		// not add gzip and undo it behind the client's back.
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	e.transports[t] = tr
	go func() {
		<-t.Done()
		e.mu.Lock()
		delete(e.transports, t)
		e.mu.Unlock()
		tr.CloseIdleConnections()
	}()
	return tr
}

// setEdgeHeaders removes every credential and identity header the caller
// sent, then asserts the hub-verified caller for the agent. system: groups
// are the hub's own and mean nothing (or too much) on the edge cluster.
func setEdgeHeaders(h http.Header, id sdk.Identity) {
	for k := range h {
		if strippedHeader(k) {
			delete(h, k)
		}
	}
	h.Set(protocol.HeaderEdgeUser, id.User)
	for _, g := range id.Groups {
		if !strings.HasPrefix(g, "system:") {
			h.Add(protocol.HeaderEdgeGroup, g)
		}
	}
}

// strippedPrefixes are compared case-insensitively, with '_' read as '-'
// (servers that map headers to CGI variables treat them alike).
var strippedPrefixes = []string{
	"impersonate-", // the agent alone decides whom it impersonates
	"x-kedge-",     // the hub's identity contract ends at this provider
	"x-wharf-",     // HeaderEdgeUser/Group and anything else of ours
	"x-remote-",    // kube's request-header authentication
}

var strippedNames = []string{"authorization", "proxy-authorization", "cookie"}

func strippedHeader(name string) bool {
	n := foldHeader(name)
	for _, s := range strippedNames {
		if n == s {
			return true
		}
	}
	for _, p := range strippedPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

func foldHeader(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}
