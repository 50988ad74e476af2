package edges

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/sdk"
)

// schemaEdges names the edges resource in Status errors.
var schemaEdges = schema.GroupResource{Group: v1alpha1.GroupName, Resource: v1alpha1.Resource}

// VerbProxy is the verb a caller must hold on edges/<name> to use its egress.
const VerbProxy = "proxy"

// Tunnel is one live agent tunnel; *revdial.Dialer implements it. A new
// tunnel of the same edge is a new Tunnel value, and Done closes when this
// one dies, so the handler can drop what it kept for it.
type Tunnel interface {
	Dial(ctx context.Context) (net.Conn, error)
	Done() <-chan struct{}
}

// EgressMetrics counts the bytes that cross tunnels. Nil means none.
type EgressMetrics interface {
	// TunnelBytes adds n bytes; direction is "to_edge" or "from_edge".
	TunnelBytes(edgeType v1alpha1.EdgeType, direction string, n int)
}

// EgressConfig configures NewEgress.
type EgressConfig struct {
	Authorizer Authorizer
	// Edge returns the Edge from the provider's cluster-aware cache.
	Edge func(cluster, name string) (*v1alpha1.Edge, bool)
	// Tunnel returns the edge's live tunnel, if its agent is connected.
	Tunnel  func(cluster, name string) (Tunnel, bool)
	Metrics EgressMetrics
}

// Egress serves the consumer side of edges: {EgressBase}/k8s/... for
// kubernetes edges and {EgressBase}/ssh for servers (see package protocol).
type Egress struct {
	cfg EgressConfig
	mux *http.ServeMux

	mu         sync.Mutex
	transports map[Tunnel]*http.Transport // one per live tunnel; dropped when it dies
}

// NewEgress returns the egress handler. Mount it with Register, or serve it
// for everything under /edgeproxy/.
func NewEgress(cfg EgressConfig) (*Egress, error) {
	if cfg.Authorizer == nil || cfg.Edge == nil || cfg.Tunnel == nil {
		return nil, errors.New("edges egress: authorizer, edge and tunnel lookups are required")
	}
	e := &Egress{cfg: cfg, mux: http.NewServeMux(), transports: map[Tunnel]*http.Transport{}}
	e.Register(e.mux)
	e.mux.HandleFunc("/", notFound)
	return e, nil
}

// egressPattern is EgressBase with path wildcards.
const egressPattern = "/edgeproxy/clusters/{cluster}/apis/edges.wharf.dev/v1alpha1/edges/{name}"

// Register adds the egress routes to mux; the provider may add its own
// (such as {EgressBase}/join-token) to the same mux.
func (e *Egress) Register(mux *http.ServeMux) {
	mux.HandleFunc(egressPattern+"/k8s", e.serveK8s)
	mux.HandleFunc(egressPattern+"/k8s/{path...}", e.serveK8s)
	mux.HandleFunc(egressPattern+"/ssh", e.serveSSH)
}

func (e *Egress) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.mux.ServeHTTP(w, r) }

// open runs the checks every egress request passes, in the order the spec
// demands: identity, authorization (before anything about the edge is
// looked at, so a missing edge and a forbidden one answer alike), the edge,
// its type, its tunnel.
func (e *Egress) open(r *http.Request, want v1alpha1.EdgeType) (*v1alpha1.Edge, Tunnel, error) {
	cluster, name := r.PathValue("cluster"), r.PathValue("name")
	id, ok := sdk.IdentityFrom(r)
	if !ok {
		return nil, nil, apierrors.NewUnauthorized("Unauthorized")
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		// Not a name an edge can have; word it as the denial it would get.
		return nil, nil, forbiddenEdge(id.User, name, VerbProxy)
	}
	if err := e.cfg.Authorizer.Authorize(r.Context(), r, cluster, name, VerbProxy); err != nil {
		return nil, nil, err
	}
	edge, ok := e.cfg.Edge(cluster, name)
	if !ok {
		return nil, nil, apierrors.NewNotFound(schemaEdges, name)
	}
	if edge.Spec.Type != want {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("edge %q is of type %q; this path serves %s edges", name, edge.Spec.Type, want))
	}
	t, ok := e.cfg.Tunnel(cluster, name)
	if !ok {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("edge %q is not connected", name))
	}
	return edge, t, nil
}

// dial opens one tunnel connection, counted for the metrics.
func (e *Egress) dial(ctx context.Context, t Tunnel, typ v1alpha1.EdgeType) (net.Conn, error) {
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	if e.cfg.Metrics == nil {
		return c, nil
	}
	return &countingConn{Conn: c, typ: typ, m: e.cfg.Metrics}, nil
}

// logDenial records refusals at a verbose level, with no credential.
func logDenial(r *http.Request, err error) {
	id, _ := sdk.IdentityFrom(r)
	klog.FromContext(r.Context()).V(3).Info("Edge egress refused", "cluster", r.PathValue("cluster"), "edge", r.PathValue("name"),
		"user", id.User, "code", apierrors.ReasonForError(err))
}

// k8sSuffix returns the API path after {EgressBase}/k8s, escaped as the
// client sent it, or false if the request path does not have that shape.
func k8sSuffix(r *http.Request) (string, bool) {
	prefix := protocol.EgressBase(r.PathValue("cluster"), r.PathValue("name")) + "/k8s"
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	if rest == "" {
		rest = "/"
	}
	return rest, true
}
