package edges

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

var edgeGR = schema.GroupResource{Group: v1alpha1.GroupName, Resource: v1alpha1.Resource}

// Authorizer decides whether the hub-asserted caller of a request may act on
// an Edge (or a non-resource path) in a workspace. Its errors are
// apierrors StatusErrors (401, 403). The egress code provides it.
type Authorizer interface {
	Authorize(ctx context.Context, r *http.Request, cluster, name, verb string) error
	AuthorizeNonResource(ctx context.Context, r *http.Request, cluster, path, verb string) error
}

const edgePath = "/apis/" + v1alpha1.GroupName + "/" + v1alpha1.Version + "/edges/{name}"

// buildHandler is the backend's whole handler chain, in the order a request
// meets it (the hub has already stripped /services/providers/edges, removed
// every inbound X-Kedge-* header and, off the public prefix, authenticated
// the caller and asserted their identity):
//
//  1. /agent/pickup/<token>: revdial pickups. Public; the single-use token
//     is the authorization.
//  2. /agent/{cluster}/…/edges/{name}/join (POST) and …/proxy (GET): agent
//     ingress. Public; the join token or the agent credential, checked
//     against that one Edge of that one cluster, is the authorization.
//     Every failure is the same 401.
//  3. /edgeproxy/clusters/{cluster}/…/edges/{name}/join-token (POST):
//     hub-authenticated; the caller needs update on edges/<name> in
//     {cluster}.
//  4. /edgeproxy/…: consumer egress (egress.go), authorized per request
//     before any tunnel lookup.
//  5. /metrics (GET): hub admins only (get on the non-resource /metrics
//     in root).
//  6. Anything else: 404.
func (p *Provider) buildHandler() http.Handler {
	agent := http.NewServeMux()
	agent.HandleFunc("/agent/{cluster}"+edgePath+"/join", p.withAgentEdge(http.MethodPost, p.serveJoin))
	agent.HandleFunc("/agent/{cluster}"+edgePath+"/proxy", p.withAgentEdge(http.MethodGet, p.serveAgentProxy))
	agent.HandleFunc("/", notFound)

	edgeproxy := http.NewServeMux()
	edgeproxy.HandleFunc("/edgeproxy/clusters/{cluster}"+edgePath+"/join-token", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			writeStatus(w, r, apierrors.NewMethodNotSupported(edgeGR, r.Method))
			return
		}
		p.serveJoinToken(w, r)
	})
	edgeproxy.Handle("/edgeproxy/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.egress.ServeHTTP(w, r) }))

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := r.URL.Path; {
		case strings.HasPrefix(path, protocol.PickupPrefix):
			p.rd.ServeHTTP(w, r)
		case strings.HasPrefix(path, protocol.PublicPrefix):
			agent.ServeHTTP(w, r)
		case strings.HasPrefix(path, "/edgeproxy/"):
			edgeproxy.ServeHTTP(w, r)
		case path == "/metrics" && r.Method == http.MethodGet:
			p.serveMetrics(w, r)
		default:
			notFound(w, r)
		}
	})
}

// withAgentEdge checks the path's cluster and name; a malformed one gets
// the same 401 as a wrong credential.
func (p *Provider) withAgentEdge(method string, h func(http.ResponseWriter, *http.Request, string, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			writeStatus(w, r, apierrors.NewMethodNotSupported(edgeGR, r.Method))
			return
		}
		cluster, name := r.PathValue("cluster"), r.PathValue("name")
		if !validCluster(cluster) || len(validation.IsDNS1123Subdomain(name)) > 0 {
			writeStatus(w, r, errUnauthorized)
			return
		}
		h(w, r, cluster, name)
	}
}

// serveJoinToken mints a join token for an Edge; see tokens.go.
func (p *Provider) serveJoinToken(w http.ResponseWriter, r *http.Request) {
	cluster, name := r.PathValue("cluster"), r.PathValue("name")
	if err := p.authz.Authorize(r.Context(), r, cluster, name, "update"); err != nil {
		writeStatus(w, r, err)
		return
	}
	if !validCluster(cluster) || len(validation.IsDNS1123Subdomain(name)) > 0 {
		writeStatus(w, r, apierrors.NewNotFound(edgeGR, name))
		return
	}
	token, exp, err := p.mintJoinToken(r.Context(), cluster, name)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, protocol.JoinTokenResponse{Token: token, ExpiresAt: exp.Format(time.RFC3339)})
}

func (p *Provider) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if err := p.authz.AuthorizeNonResource(r.Context(), r, "root", "/metrics", "get"); err != nil {
		writeStatus(w, r, err)
		return
	}
	promhttp.HandlerFor(p.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// agentError is what an agent is told: 400 and 401 as they are, anything
// else a bare 503, so that a hub error (say a 403 for a workspace that did
// not enable edges) cannot tell a prober more than "no".
func agentError(err error) error {
	if apierrors.IsUnauthorized(err) || apierrors.IsBadRequest(err) {
		return err
	}
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return errUnauthorized
	}
	return apierrors.NewServiceUnavailable("the edges provider cannot check the credential now; retry")
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeStatus(w, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
}

// writeStatus answers with err as a Kubernetes Status. An error that is not
// an API status is logged and answered as a bare 500, so internals never
// reach a client.
func writeStatus(w http.ResponseWriter, r *http.Request, err error) {
	var ae apierrors.APIStatus
	if !errors.As(err, &ae) {
		klog.FromContext(r.Context()).Error(err, "edges request failed", "path", r.URL.Path)
		ae = apierrors.NewInternalError(errors.New("internal error"))
	}
	st := ae.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	writeJSON(w, int(st.Code), st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// validCluster keeps a cluster id inside its path segment (the hub's ids
// are lowercase base36; paths use ':').
func validCluster(c string) bool {
	if c == "" || len(c) > 253 {
		return false
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == ':') {
			return false
		}
	}
	return true
}
