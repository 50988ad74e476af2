package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// IdentityMode says whose identity the edge API server sees.
type IdentityMode string

const (
	// IdentityImpersonate (the default): the agent's credential with
	// Impersonate-User/Group of the hub-asserted caller, so the edge
	// cluster's own RBAC applies per person.
	IdentityImpersonate IdentityMode = "impersonate"
	// IdentityAgent: every caller acts as the agent's own identity
	// (kedge's behaviour), only when chosen explicitly.
	IdentityAgent IdentityMode = "agent"
)

// systemPrefix marks Kubernetes' reserved names. Groups under it are never
// impersonated (system:masters would be cluster-admin on the edge).
const systemPrefix = "system:"

// hubSystemPrefix is the hub's own reserved users (providers and the
// hub's controllers); no edge cluster gives them meaning, so they may be
// impersonated as they are.
const hubSystemPrefix = "system:wharf:"

// LoadRestConfig loads the edge cluster's rest config from kubeconfig, or
// with client-go's default rules (KUBECONFIG, ~/.kube/config, then
// in-cluster) when kubeconfig is "".
func LoadRestConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("edge cluster config: %w", err)
	}
	return cfg, nil
}

// kubeProxy reverse-proxies tunnel requests to the edge API server.
type kubeProxy struct {
	mode   IdentityMode
	prefix string
	rp     *httputil.ReverseProxy
}

// identityKey carries the identity checked in ServeHTTP to Rewrite.
type identityKey struct{}

type edgeIdentity struct {
	user   string
	groups []string
}

// newKubeProxy builds the handler. The transport is client-go's for cfg, so
// the agent's own credential (token, client certificate, exec plugin)
// authenticates every request.
func newKubeProxy(cfg *rest.Config, mode IdentityMode, prefix string) (http.Handler, error) {
	switch mode {
	case IdentityImpersonate, IdentityAgent:
	default:
		return nil, fmt.Errorf("--identity %q: must be impersonate or agent", mode)
	}
	if mode == IdentityImpersonate && (cfg.Impersonate.UserName != "" || len(cfg.Impersonate.Groups) > 0 || cfg.Impersonate.UID != "") {
		// client-go's impersonating round tripper would overwrite the
		// caller's identity with the kubeconfig's, silently.
		return nil, errors.New("the edge kubeconfig already impersonates someone; that cannot be combined with --identity impersonate")
	}
	target, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("edge API server URL: %w", err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("edge API server transport: %w", err)
	}
	p := &kubeProxy{mode: mode, prefix: prefix}
	p.rp = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { p.rewrite(pr, target) },
		Transport: rt,
		// Watches and logs stream: flush every write.
		FlushInterval: -1,
		ErrorHandler:  p.proxyError,
	}
	return p, nil
}

func (p *kubeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.mode == IdentityImpersonate {
		id, err := p.identity(r.Header)
		if err != nil {
			writeStatus(w, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	}
	p.rp.ServeHTTP(w, r)
}

// identity reads the hub-asserted caller that the provider put into the
// tunnel request. No user is a 401: the agent never lets a request reach
// the edge as itself in impersonate mode.
func (p *kubeProxy) identity(h http.Header) (edgeIdentity, error) {
	users := h.Values(protocol.HeaderEdgeUser)
	if len(users) != 1 || users[0] == "" {
		return edgeIdentity{}, apierrors.NewUnauthorized("the request carries no edge caller identity")
	}
	user := users[0]
	if p.prefix == "" && strings.HasPrefix(user, systemPrefix) && !strings.HasPrefix(user, hubSystemPrefix) {
		// A hub service account is system:serviceaccount:<ns>:<name>,
		// with names its workspace admin chooses: unprefixed it would
		// act as the edge cluster's own service account or component.
		return edgeIdentity{}, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, user,
			errors.New("system: users are reserved on the edge cluster; the agent impersonates them only with --impersonate-prefix"))
	}
	id := edgeIdentity{user: p.prefix + user}
	for _, g := range h.Values(protocol.HeaderEdgeGroup) {
		if g == "" || strings.HasPrefix(g, systemPrefix) {
			continue
		}
		id.groups = append(id.groups, p.prefix+g)
	}
	return id, nil
}

// rewrite runs after ReverseProxy removed the hop-by-hop headers (those
// named by Connection included), so nothing a caller lists there can strip
// the Impersonate-* headers set here.
func (p *kubeProxy) rewrite(pr *httputil.ProxyRequest, target *url.URL) {
	pr.SetURL(target)
	h := pr.Out.Header
	for k := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "impersonate-") || strings.HasPrefix(lk, "x-wharf-edge-") || strings.HasPrefix(lk, "x-kedge-") {
			delete(h, k)
		}
	}
	// Credentials from the far side never reach the edge; the transport
	// adds the agent's own.
	h.Del("Authorization")
	h.Del("Proxy-Authorization")
	h.Del("Cookie")
	if id, ok := pr.In.Context().Value(identityKey{}).(edgeIdentity); ok {
		h.Set("Impersonate-User", id.user)
		for _, g := range id.groups {
			h.Add("Impersonate-Group", g)
		}
	}
}

func (p *kubeProxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the caller went away
	}
	klog.FromContext(r.Context()).Error(err, "Edge API server request failed", "method", r.Method, "path", r.URL.Path)
	writeStatus(w, apierrors.NewServiceUnavailable("the edge's API server is unreachable from its agent"))
}

// writeStatus answers with a Kubernetes Status, as the API server would.
func writeStatus(w http.ResponseWriter, err error) {
	var st metav1.Status
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st = se.Status()
	} else {
		st = apierrors.NewInternalError(err).ErrStatus
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}
