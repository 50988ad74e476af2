package proxy

import (
	"errors"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// BackendPrefix is the backend proxy's public route; the remainder maps to
// plugin.BackendPrefix on the provider's socket.
const BackendPrefix = "/services/providers/"

// Backend is the backend proxy, /services/providers/<name>/*. It asserts
// the caller's verified identity to the provider; see the package doc for
// the threat model.
type Backend struct {
	providers Providers
	identity  IdentityResolver
	hop       Hop
	// limit bounds each tenant's authenticated requests in flight
	// (hub/fairness); nil means no bound.
	limit func(http.Handler) http.Handler
	// refused is told of a public-path request with a credential that
	// the provider refused (WithRefusals); nil: nobody.
	refused func(*http.Request)
	rp      *httputil.ReverseProxy
}

// NewBackend returns the backend proxy. It must be served behind
// authentication (request.UserFrom), except for paths where IsPublic.
func NewBackend(providers Providers, identity IdentityResolver) *Backend {
	b := &Backend{providers: providers, identity: identity}
	b.rp = &httputil.ReverseProxy{
		Transport: dispatch{},
		// Flush after every write, whatever the response: the contract
		// (spec/proxies-and-edges.md) is that nothing a provider writes
		// waits in the hub, and a provider may send a Content-Length and
		// still trickle the body. This costs about a third more proxy CPU
		// on small answers than buffering known-length responses would
		// (test/bench/providers).
		FlushInterval:  -1,
		BufferPool:     newBufferPool(),
		Rewrite:        rewriteBackend,
		ErrorHandler:   proxyError,
		ModifyResponse: onResponse,
	}
	return b
}

// WithHop enables the forwarding hop between hub replicas for replicas:
// single providers: signing the identity sent to a holder (Target.Remote)
// and accepting the identity a replica forwards here. Without it a
// forwarded identity is refused (401). It returns b.
func (b *Backend) WithHop(hop Hop) *Backend {
	b.hop = hop
	return b
}

// WithLimit bounds authenticated requests, which run behind limit once
// the caller is known: a person holding many slow requests to providers
// spends her own share only (hub/fairness). Public paths carry no caller
// and requests forwarded by another replica were bounded there. It
// returns b.
func (b *Backend) WithLimit(limit func(http.Handler) http.Handler) *Backend {
	b.limit = limit
	return b
}

// WithTransport wraps the transport to providers, as the hub's flow
// control needs to see its waits (hub/fairness AsideTransport: a request
// gives its CPU turn back while the provider answers). It returns b.
func (b *Backend) WithTransport(wrap func(http.RoundTripper) http.RoundTripper) *Backend {
	b.rp.Transport = wrap(b.rp.Transport)
	return b
}

// WithRefusals tells refused of every request on a public path that
// carried a credential (an Authorization header) and that the provider
// answered 401 or 403: a credential only the provider verifies (an edge
// agent's join token), which the hub's failed-authentication budget
// otherwise never sees, so that guessing one costs the caller's address
// as a bad token on any other route does (sixth outside review, #6: a
// flood of bogus join tokens all reached the provider). A request
// forwarded by another replica is charged there, not here. It returns b.
func (b *Backend) WithRefusals(refused func(*http.Request)) *Backend {
	b.refused = refused
	return b
}

// authenticated is what serves requests with a caller: b, behind the limit.
func (b *Backend) authenticated() http.Handler {
	if b.limit == nil {
		return b
	}
	return b.limit(b)
}

// rewriteBackend runs on ReverseProxy's clone of the request after it
// removed hop-by-hop headers (including any named in Connection), so the
// identity set here cannot be removed again. SetIdentity strips every
// X-Kedge-* header first, whatever its case or spelling. Authorization is
// put back from the inbound request, as authentication deleted it; the
// hub's own cookies and CSRF header are not forwarded (stripHubCredentials).
func rewriteBackend(pr *httputil.ProxyRequest) {
	f, _ := forwardFrom(pr.In.Context())
	pr.SetXForwarded()
	// ReverseProxy drops the client's Forwarded and X-Forwarded-*, and
	// SetXForwarded states the address the hub saw; X-Real-Ip would still
	// pass as the client wrote it, a spoofed address for any provider that
	// logs or rate-limits by it.
	pr.Out.Header.Del("X-Real-Ip")
	if f.remote != nil {
		rewriteHop(pr, f)
		return
	}
	pr.Out.URL = upstreamURL(plugin.BackendPrefix, f.route, pr.In.URL.RawQuery)
	pr.Out.Host = ""
	if f.hopped {
		keepForwarded(pr)
	}
	stripHop(pr.Out.Header)
	stripHubCredentials(pr.Out.Header)
	restoreAuthorization(pr.In.Context(), pr.Out.Header)
	// An empty identity (public path) strips and asserts nothing.
	sdk.SetIdentity(pr.Out.Header, f.identity)
	// Only the hub's own, on an aggregated request (rewriteAggregated).
	pr.Out.Header.Del(sdk.HeaderDelegation)
	if f.originalPath != "" {
		rewriteAggregated(pr, f)
	}
}

// IsPublic reports whether r addresses one of a provider's public paths,
// which must reach ServeHTTP without authentication. Unknown providers and
// malformed paths are not public.
func (b *Backend) IsPublic(r *http.Request) bool {
	rt, err := splitRoute(r.URL, BackendPrefix)
	if err != nil {
		return false
	}
	t, ok := b.providers.Get(rt.name)
	return ok && isPublic(rt, t.PublicPaths)
}

// isPublic matches the cleaned path, and the escaped form when one is
// forwarded, so "/agent%2F..." cannot pass as "/agent/".
func isPublic(rt route, prefixes []string) bool {
	for _, pre := range prefixes {
		if pre == "" {
			continue
		}
		if strings.HasPrefix(rt.rest, pre) && (rt.rawRest == "" || strings.HasPrefix(rt.rawRest, pre)) {
			return true
		}
	}
	return false
}

// ServeHTTP implements the identity contract: look up the provider, resolve
// and verify identity (unless public), strip every X-Kedge-* header, assert
// the verified ones and stream to the provider.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt, err := splitRoute(r.URL, BackendPrefix)
	if err != nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "no provider in path")
		return
	}
	t, ok := b.providers.Get(rt.name)
	if !ok {
		writeNotFound(w, rt.name)
		return
	}
	f := &forward{name: rt.name, route: rt, transport: t.Transport, retryAfter: t.RetryAfter}
	defer func() { observe(rt.name, f.code, start, f.headers) }()
	switch {
	case isPublic(rt, t.PublicPaths):
		if b.refused != nil && !isHop(r) && len(r.Header.Values("Authorization")) > 0 {
			defer func() {
				if !f.headers.IsZero() && (f.code == http.StatusUnauthorized || f.code == http.StatusForbidden) {
					b.refused(r)
				}
			}()
		}
	case len(r.Header.Values(AssertionHeader)) > 0:
		// Forwarded by another replica, which authenticated the caller.
		// An aggregated request's original path travels in a hop header
		// the assertion binds; clients' copies of it are stripped.
		f.originalPath = r.Header.Get(OriginalPathHopHeader)
		if f.identity, f.code = b.verifyHop(w, r, rt, f.originalPath); f.code != 0 {
			return
		}
		f.hopped = true
	default:
		// Identity comes before the running check so that a caller who may
		// not use any workspace learns nothing about the provider's state.
		if f.identity, f.code = b.resolve(w, r); f.code != 0 {
			return
		}
	}
	if f.code = b.target(w, r, t, f); f.code != 0 {
		return
	}
	// A shallow copy: ReverseProxy clones the request (headers included)
	// itself, and all header edits happen on that clone in Rewrite.
	b.rp.ServeHTTP(w, r.WithContext(withForward(r.Context(), f)))
}

// target points f at the provider's socket or, for a replicas: single
// provider held elsewhere, at the holder with a signed identity. It
// answers the caller itself and returns the code when it cannot.
func (b *Backend) target(w http.ResponseWriter, r *http.Request, t Target, f *forward) int {
	if t.Remote == nil {
		if t.Transport == nil {
			writeUnavailable(w, f.name, t.RetryAfter)
			return http.StatusServiceUnavailable
		}
		return 0
	}
	if isHop(r) || b.hop == nil {
		// Never a second hop: the replicas disagree on the holder for a
		// moment (failover), and the caller should retry.
		writeUnavailable(w, f.name, t.RetryAfter)
		return http.StatusServiceUnavailable
	}
	f.remote, f.transport = t.Remote, t.Remote.Transport
	if f.identity.User == "" {
		return 0 // public path: forwarded without identity
	}
	var err error
	if f.assertion, err = b.hop.Sign(t.Remote.Replica, aggregatedBinding(r, f), f.identity); err != nil {
		klog.FromContext(r.Context()).Error(err, "Signing identity for the replica hop", "provider", f.name)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "forwarding to the provider's replica failed")
		return http.StatusInternalServerError
	}
	return 0
}

// verifyHop accepts the identity another replica asserted, or refuses the
// request: a forged, replayed, expired or misdirected assertion is a 401
// and never falls back to any other identity.
func (b *Backend) verifyHop(w http.ResponseWriter, r *http.Request, rt route, originalPath string) (sdk.Identity, int) {
	vals := r.Header.Values(AssertionHeader)
	if b.hop == nil || len(vals) != 1 || len(r.Header.Values(OriginalPathHopHeader)) > 1 {
		return fail(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "invalid replica assertion")
	}
	bind := binding(r, rt)
	bind.OriginalPath = originalPath
	id, err := b.hop.Verify(vals[0], bind)
	if err != nil {
		klog.FromContext(r.Context()).Info("Refusing forwarded provider request", "provider", rt.name, "from", r.Header.Get(HopHeader), "err", err)
		return fail(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "invalid replica assertion")
	}
	if err := validateIdentity(id); err != nil {
		return fail(w, http.StatusForbidden, metav1.StatusReasonForbidden, "identity cannot be asserted to providers")
	}
	return id, 0
}

// resolve returns the identity to assert, or answers the caller itself and
// returns the status code it wrote.
func (b *Backend) resolve(w http.ResponseWriter, r *http.Request) (sdk.Identity, int) {
	u, ok := request.UserFrom(r.Context())
	if !ok || u == nil || u.GetName() == "" || u.GetName() == user.Anonymous {
		w.Header().Set("WWW-Authenticate", `Bearer realm="wharf"`)
		return fail(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "authentication required")
	}
	id, err := b.identity.Resolve(r.Context(), u, RequestedWorkspace(r))
	var forbidden *ForbiddenError
	switch {
	case err == nil:
	case errors.As(err, &forbidden):
		return fail(w, http.StatusForbidden, metav1.StatusReasonForbidden, forbidden.Error())
	case errors.Is(err, ErrNoWorkspace):
		return fail(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"no workspace selected: set the "+WorkspaceHeader+" header")
	default:
		klog.FromContext(r.Context()).Error(err, "Resolving identity for provider request", "user", u.GetName())
		return fail(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "resolving identity failed")
	}
	if err := validateIdentity(id); err != nil {
		klog.FromContext(r.Context()).Error(err, "Refusing identity for provider request", "user", u.GetName())
		return fail(w, http.StatusForbidden, metav1.StatusReasonForbidden, "identity cannot be asserted to providers")
	}
	return id, 0
}

func fail(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) (sdk.Identity, int) {
	writeStatus(w, code, reason, msg)
	return sdk.Identity{}, code
}

// onResponse keeps the hub's cookies the hub's own (stripHubSetCookies)
// and records the response for metrics.
func onResponse(resp *http.Response) error {
	stripHubSetCookies(resp.Header)
	return recordCode(resp)
}

// recordCode notes the provider's status and when its headers arrived, for
// metrics; ModifyResponse runs before an upgrade is carried, so 101s are
// seen too.
func recordCode(resp *http.Response) error {
	if f, ok := forwardFrom(resp.Request.Context()); ok {
		f.code, f.headers = resp.StatusCode, time.Now()
	}
	return nil
}

// proxyError turns transport failures into Status responses. A socket that
// refuses or resets means the provider stopped after lookup: 503, like a
// known-down provider. So does a holder replica that refuses or drops the
// connection (it died; another replica is about to take over).
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	f, _ := forwardFrom(r.Context())
	name := ""
	if f != nil {
		name = f.name
	}
	if r.Context().Err() != nil {
		// The caller went away; there is nobody to answer. 499 is the
		// conventional "client closed request" for metrics only.
		setCode(f, 499)
		return
	}
	if isProviderGone(err) || (f != nil && f.remote != nil && isConnError(err)) {
		var after = defaultRetryAfter
		if f != nil && f.retryAfter > 0 {
			after = f.retryAfter
		}
		writeUnavailable(w, name, after)
		setCode(f, http.StatusServiceUnavailable)
		return
	}
	klog.FromContext(r.Context()).Error(err, "Proxying to provider", "provider", name)
	writeStatus(w, http.StatusBadGateway, metav1.StatusReasonInternalError, "provider "+name+" failed to answer")
	setCode(f, http.StatusBadGateway)
}

func setCode(f *forward, code int) {
	if f != nil {
		f.code = code
	}
}
