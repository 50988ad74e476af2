package proxy

import (
	"context"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/hub/replicas"
	"github.com/wharfhub/wharf/sdk"
)

// OriginalPathHopHeader carries an aggregated request's original path on
// the hop to the replica holding a replicas: single provider. The
// assertion binds it (replicas.Binding.OriginalPath), and it is a hop
// header: stripped from every client request and never passed to a
// provider, which gets sdk.HeaderOriginalPath instead.
const OriginalPathHopHeader = "X-Wharf-Original-Path"

// ServeAggregated proxies one request of the hub's per-workspace API
// routing (hub/aggregation) to provider's backend at r.URL.Path (the
// /apis/<group>/<version>/… path with the /clusters/<ws> prefix already
// removed, query kept). The caller was authenticated and authorized
// against the client workspace's RBAC before; id is the identity to
// assert and originalPath the client's path, sent as
// sdk.HeaderOriginalPath.
//
// Unlike the backend route, the caller's credentials are not forwarded:
// kube-aggregator does not forward them either, and the provider must act
// on the asserted identity alone. A provider that is unknown or not
// running is a 503, as kube-aggregator answers for an unavailable service.
func (b *Backend) ServeAggregated(w http.ResponseWriter, r *http.Request, provider string, id sdk.Identity, originalPath string) {
	start := time.Now()
	rt := route{name: provider, rest: cleanPath(r.URL.Path)}
	f := &forward{name: provider, route: rt, identity: id, originalPath: originalPath}
	f.delegation, _ = r.Context().Value(delegationKey{}).(string)
	defer func() { observe(provider, f.code, start, f.headers) }()
	if err := validateIdentity(id); err != nil || !validHeaderValue(originalPath) {
		f.code = http.StatusForbidden
		writeStatus(w, f.code, metav1.StatusReasonForbidden, "identity cannot be asserted to providers")
		return
	}
	t, ok := b.providers.Get(provider)
	if !ok {
		f.code = http.StatusServiceUnavailable
		writeStatus(w, f.code, metav1.StatusReasonServiceUnavailable, "service unavailable")
		return
	}
	f.transport, f.retryAfter = t.Transport, t.RetryAfter
	if f.code = b.target(w, r, t, f); f.code != 0 {
		return
	}
	b.rp.ServeHTTP(w, r.WithContext(withForward(r.Context(), f)))
}

// aggregatedBinding is what an aggregated hop's assertion is bound to.
func aggregatedBinding(r *http.Request, f *forward) (b replicas.Binding) {
	b = binding(r, f.route)
	b.OriginalPath = f.originalPath
	return b
}

// rewriteAggregated finishes an aggregated request for the provider's
// socket: after the identity (set by rewriteBackend, which stripped every
// inbound X-Kedge-*), the original path; and no caller credentials at all.
func rewriteAggregated(pr *httputil.ProxyRequest, f *forward) {
	h := pr.Out.Header
	h.Del("Authorization")
	h.Del("Cookie")
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
			delete(h, k)
		}
	}
	h.Set(sdk.HeaderOriginalPath, f.originalPath)
	if f.delegation != "" {
		h.Set(sdk.HeaderDelegation, f.delegation)
	}
}

type delegationKey struct{}

// WithDelegation returns ctx carrying the delegation (hub/fairness) of
// an aggregated request: ServeAggregated sends it to the provider as
// sdk.HeaderDelegation, never on a hop to another replica, where it is
// worth nothing.
func WithDelegation(ctx context.Context, tok string) context.Context {
	if tok == "" {
		return ctx
	}
	return context.WithValue(ctx, delegationKey{}, tok)
}
