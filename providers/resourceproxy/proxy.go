package resourceproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/sdk"
)

// maxBody bounds a write's body, as kube-apiserver bounds its own.
const maxBody = 3 << 20

// errDeadline is the cause of a non-watch request hitting RequestTimeout.
var errDeadline = errors.New("resource proxy: 60s request cap")

// targetSource returns the connection of a route's target.
type targetSource interface {
	Get(ctx context.Context, r *Route) (*targetConn, error)
}

// Handler serves aggregated requests: the hub routes a client workspace's
// /clusters/<ws>/apis/<group>/<version>/... here as /apis/<group>/<version>/...
// with X-Kedge-Original-Path set.
type Handler struct {
	routes     *Routes
	targets    targetSource
	namespaces ClientNamespaces
	metrics    *Metrics
	clock      clock.WithDelayedExecution
}

// NewHandler builds the proxy handler.
func NewHandler(routes *Routes, targets *Targets, ns ClientNamespaces, m *Metrics, c clock.WithDelayedExecution) *Handler {
	return &Handler{routes: routes, targets: targets, namespaces: ns, metrics: m, clock: c}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Only the hub's aggregation route sets the original path, after the
	// client workspace's authentication and RBAC; the backend proxy strips
	// it from anything a client sends. Without it the request skipped that
	// RBAC: it is answered as if nothing were here.
	id, ok := sdk.IdentityFrom(r)
	if r.Header.Get(HeaderOriginalPath) == "" || !ok || id.Cluster == "" || id.Tenant == "" {
		writeErr(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return
	}
	if strings.HasPrefix(id.User, WorkspaceUserPrefix) {
		// A proxy's own request routed to a proxy again: refusing it stops
		// two workspaces that route one group/version to each other from
		// looping.
		writeErr(w, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("resource proxy does not forward requests sent by a resource proxy")))
		return
	}
	// The calls made to serve it carry its delegation to a workspace
	// target (targetConn.toHub), the hub, which sent it.
	r = r.WithContext(sdk.WithDelegation(r.Context(), r))
	req, ok := parseRequest(r)
	if !ok {
		writeErr(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return
	}
	if req.Version == "" {
		if !h.serveGroup(w, id.Cluster, req.Group) {
			writeErr(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
		}
		return
	}
	route := h.routes.Get(id.Cluster, req.Group, req.Version)
	if route == nil {
		writeErr(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return
	}
	if h.routes.Path(id.Cluster) != id.Tenant {
		h.routes.SetPath(id.Cluster, id.Tenant)
	}
	user := WorkspaceUserPrefix + id.Tenant
	if route.Target.Workspace != "" && route.Target.Workspace == id.Tenant {
		// The controller refuses this once it knows the path; until then it
		// must not reach the target, which would route it here again.
		unavailable(w, route.Target.Name(), route.GroupVersion())
		return
	}
	if req.Discovery {
		conn, err := h.targets.Get(r.Context(), route)
		if err != nil {
			klog.V(2).InfoS("resource proxy: target not usable", "target", route.Target.Name(), "cluster", id.Cluster, "reason", reasonError, "err", err.Error())
			conn = nil
		}
		h.serveDiscovery(w, r, route, conn, user)
		return
	}
	h.proxy(w, r, route, req, ownerOf(id.Cluster, id.Tenant), user)
}

// outcome is what the request metrics and the log line say.
type outcome struct {
	code   int
	reason string
	peer   string
}

func (h *Handler) proxy(w http.ResponseWriter, r *http.Request, route *Route, req apiRequest, o owner, user string) {
	target, gv := route.Target.Name(), route.GroupVersion()
	res := &outcome{reason: reasonUpstream}
	start := h.clock.Now()
	defer func() {
		h.metrics.requests.WithLabelValues(target, gv, req.Verb, strconv.Itoa(res.code), res.reason).Inc()
		if !req.Watch {
			h.metrics.duration.WithLabelValues(target, req.Verb).Observe(h.clock.Since(start).Seconds())
		}
		if res.reason != reasonUpstream {
			klog.V(2).InfoS("resource proxy: request", "target", target, "groupVersion", gv, "verb", req.Verb, "code", res.code, "reason", res.reason, "peer", res.peer)
		}
	}()
	if isUpgrade(r) {
		res.code, res.reason = http.StatusNotImplemented, reasonUpgrade
		upgradeRejected(w)
		return
	}
	ctx := r.Context()
	if !req.Watch {
		h.metrics.inflight.WithLabelValues(target).Inc()
		defer h.metrics.inflight.WithLabelValues(target).Dec()
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		t := h.clock.AfterFunc(RequestTimeout, func() { cancel(errDeadline) })
		defer t.Stop()
		r = r.WithContext(ctx)
	}
	fail := func(reason string) {
		res.code, res.reason = http.StatusServiceUnavailable, reason
		unavailable(w, target, gv)
	}
	conn, err := h.targets.Get(ctx, route)
	if err != nil {
		klog.InfoS("resource proxy: target not usable", "target", target, "cluster", o.Cluster, "reason", reasonError, "err", err.Error())
		fail(reasonError)
		return
	}
	res.peer = peerOf(conn)
	query := r.URL.RawQuery
	owned := route.Mode == AccessOwned
	if owned && (req.Verb == "list" || req.Verb == "watch" || req.Verb == "deletecollection") {
		query = injectSelector(r.URL.Query(), o)
	}
	var body []byte
	write := req.Verb == "create" || req.Verb == "update" || req.Verb == "patch"
	if r.Body != nil && (write || req.Verb == "delete" || req.Verb == "deletecollection") {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			fail(errReason(r, err))
			return
		}
		if len(body) > maxBody {
			res.code, res.reason = http.StatusRequestEntityTooLarge, reasonError
			writeErr(w, apierrors.NewRequestEntityTooLargeError("limit is 3145728"))
			return
		}
	}
	if req.Namespace != "" && write {
		exists, err := h.namespaces.Exists(ctx, o.Cluster, req.Namespace)
		if err != nil {
			klog.InfoS("resource proxy: namespace check failed", "target", target, "cluster", o.Cluster, "reason", reasonError, "err", err.Error())
			fail(reasonError)
			return
		}
		if !exists {
			res.code, res.reason = http.StatusNotFound, reasonNamespaceMiss
			writeErr(w, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, req.Namespace))
			return
		}
		conn.ensureNamespace(ctx, req.Namespace, user)
	}
	plainGet := req.Verb == "get" && req.Sub == "" && acceptsPlainJSON(r)
	if owned && req.Name != "" && req.Verb != "create" && !plainGet {
		if !h.checkOwned(w, r, conn, route, req, o, user, res, isApply(r)) {
			return
		}
	}
	ctype := r.Header.Get("Content-Type")
	// Owned mode labels every write (the object is the client's, checked
	// above). Mode all labels creates only: a patch there must not take
	// another client's object over.
	if write && req.Sub == "" && (owned || req.Verb == "create") {
		var ok bool
		if body, ctype, ok = injectLabels(body, ctype, o, true); !ok {
			res.code, res.reason = http.StatusUnsupportedMediaType, reasonError
			writeStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: "resource proxy: the body of a write must be a JSON or YAML object (or a JSON patch) the owner labels can be set in"})
			return
		}
	}
	out, err := h.outgoing(r, conn, query, body, ctype, user)
	if err != nil {
		fail(reasonError)
		return
	}
	resp, err := conn.roundTrip(out)
	if err != nil {
		fail(errReason(r, err))
		return
	}
	defer resp.Body.Close()
	if !req.Watch && resp.StatusCode >= 500 {
		fail(reasonUpstreamError)
		return
	}
	if resp.StatusCode == http.StatusNotFound && req.Namespace != "" && write {
		conn.nsKnown.set(user+"|"+req.Namespace, false) // maybe deleted there
	}
	if hiddenAnswer(route, resp) {
		res.code = http.StatusNotFound
		writeHidden(w, route)
		return
	}
	res.code = resp.StatusCode
	if plainGet && owned && resp.StatusCode == http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			fail(errReason(r, err))
			return
		}
		if l, err := objectLabels(b); err != nil || !o.owns(l) {
			res.code, res.reason = http.StatusNotFound, reasonOwnershipMasked
			notFound(w, route.Group, req.Resource, req.Name)
			return
		}
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
		return
	}
	if req.Watch {
		h.metrics.watches.WithLabelValues(target).Inc()
		defer h.metrics.watches.WithLabelValues(target).Dec()
	}
	copyResponse(w, resp, req.Watch)
}

// checkOwned GETs the named object on the target first and masks it with
// 404 when the client does not own it, or cannot read it (a mutation
// needs get). It reports whether the request may go on.
//
// A server-side apply of an object that does not exist yet creates it, so
// mayCreate lets a 404 through.
func (h *Handler) checkOwned(w http.ResponseWriter, r *http.Request, conn *targetConn, route *Route, req apiRequest, o owner, user string, res *outcome, mayCreate bool) bool {
	p := "/apis/" + route.GroupVersion() + "/"
	if req.Namespace != "" {
		p += "namespaces/" + req.Namespace + "/"
	}
	p += req.Resource + "/" + req.Name
	get, err := http.NewRequestWithContext(r.Context(), http.MethodGet, conn.url(p, "").String(), nil)
	if err != nil {
		res.code, res.reason = http.StatusServiceUnavailable, reasonError
		unavailable(w, route.Target.Name(), route.GroupVersion())
		return false
	}
	get.Header.Set("Accept", "application/json")
	get.Header.Set("Impersonate-User", user)
	resp, err := conn.roundTrip(get)
	if err != nil {
		res.code, res.reason = http.StatusServiceUnavailable, errReason(r, err)
		unavailable(w, route.Target.Name(), route.GroupVersion())
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case err != nil || resp.StatusCode >= 500:
		res.code, res.reason = http.StatusServiceUnavailable, reasonUpstreamError
		unavailable(w, route.Target.Name(), route.GroupVersion())
		return false
	case route.Target.External == nil && hiddenStatus(resp.StatusCode, b):
		res.code = http.StatusNotFound
		writeHidden(w, route)
		return false
	case resp.StatusCode == http.StatusNotFound && mayCreate && req.Sub == "":
		return true
	case resp.StatusCode == http.StatusNotFound:
		res.code = http.StatusNotFound
		notFound(w, route.Group, req.Resource, req.Name)
		return false
	case resp.StatusCode != http.StatusOK:
		res.code, res.reason = http.StatusNotFound, reasonOwnershipFailed
		notFound(w, route.Group, req.Resource, req.Name)
		return false
	}
	if l, err := objectLabels(b); err != nil || !o.owns(l) {
		res.code, res.reason = http.StatusNotFound, reasonOwnershipMasked
		notFound(w, route.Group, req.Resource, req.Name)
		return false
	}
	return true
}

// outgoing is the request to the target: the same method, path and query
// (with the owner selector), a replayable body, the client identity as
// Impersonate-User, and only content negotiation headers of the caller.
// Authorization, Impersonate-* and X-Kedge-* never pass.
func (h *Handler) outgoing(r *http.Request, conn *targetConn, query string, body []byte, ctype, user string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, conn.url(r.URL.Path, query).String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	for _, k := range []string{"Accept", "User-Agent", "Accept-Language"} {
		if v := r.Header.Values(k); len(v) > 0 {
			out.Header[k] = v
		}
	}
	if ctype != "" {
		out.Header.Set("Content-Type", ctype)
	}
	out.Header.Set("Impersonate-User", user)
	return out, nil
}

// acceptsPlainJSON reports whether the response will be the object itself
// in JSON (not a Table or protobuf), so its labels can be checked on the
// answer instead of by a GET first.
func acceptsPlainJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	if a == "" {
		return true
	}
	for part := range strings.SplitSeq(a, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			return false
		}
		if (mt != "application/json" && mt != "*/*") || params["as"] != "" {
			return false
		}
	}
	return true
}

// isApply reports a server-side apply patch.
func isApply(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPatch && strings.HasPrefix(mt, "application/apply-patch")
}

var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

func copyHeaders(dst, src http.Header) {
	for k, v := range src {
		if !hopHeaders[k] {
			dst[k] = v
		}
	}
}

// copyResponse streams resp to w; a watch is flushed chunk by chunk and
// ends cleanly when the target goes away, so the client's reflector
// re-lists.
func copyResponse(w http.ResponseWriter, resp *http.Response, flush bool) {
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if !flush {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
