package core

// This file is the contract between the tenant filter's parts. It was written
// first so that the parts could be built in parallel; change it only
// additively, and say why in a comment.
//
// Layout of providers/tenantfilter (who owns what):
//   - apis/capsule/v1beta2 (Tenant, CapsuleConfiguration) and
//     apis/capsule/v1beta1 (GlobalProxySettings, ProxySetting): Go types that
//     decode Capsule's own objects; crds/: our Capsule-compatible CRDs;
//     controller/: the status controller.
//   - core/: this package, the filtering core shared by both modes. It is an
//     http.Handler that expects an authenticated Caller in the request context
//     and a request path relative to the downstream root (/api/..., /apis/...).
//     Files cache*.go, router*.go, namespaces*.go, forward*.go, tenants*.go,
//     reflect*.go, identity*.go belong to the namespace core; clusterscoped*.go,
//     reviews*.go, nodes*.go and package rules/ belong to the grants engine.
//   - rules/: the pure grants engine (GlobalProxySettings, ProxySetting and the
//     tenant owners' class grants), no I/O.
//   - auth/ and standalone/: capsule-proxy's listener, flags, authenticators,
//     client impersonation review, metrics, health; the package
//     tenantfilter itself is the plugin mode (sdk.Provider).

import (
	"context"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// Caller is the authenticated identity a request is filtered for. The
// front ends (standalone authenticators, or the hub's X-Kedge-User and
// X-Kedge-Groups in plugin mode) set it; the core never reads credentials.
type Caller struct {
	User   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller WithCaller stored, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Feature gate names (capsule-proxy's; all alpha, default false).
const (
	GateProxyClusterScoped      = "ProxyClusterScoped"
	GateProxyAllNamespaced      = "ProxyAllNamespaced"
	GateSkipImpersonationReview = "SkipImpersonationReview"
)

// Options are capsule-proxy's filtering options, shared by both modes: the
// standalone flags and the plugin config file map onto these one to one.
type Options struct {
	CapsuleConfigurationName   string          // --capsule-configuration-name, default "default"
	RequireCapsuleUser         bool            // --require-capsule-user, default true
	IgnoredUserGroups          []string        // --ignored-user-group
	IgnoredUsernames           []string        // --ignored-username
	ImpersonationGroupRegexp   string          // --impersonation-group-regexp
	IgnoredImpersonationGroups []string        // --ignored-impersonation-group
	EnableReflector            bool            // --enable-reflector
	DisableCaching             bool            // --disable-caching
	FeatureGates               map[string]bool // --feature-gates
	AllowedPaths               []string        // --allowed-paths, default /api, /apis, /version
	ClientQPS                  float32         // --client-connection-qps, default 20
	ClientBurst                int             // --client-connection-burst, default 30
	RoleBindingsResyncPeriod   time.Duration   // --rolebindings-resync-period, default 10h
}

// Gate reports whether the named feature gate is on.
func (o Options) Gate(name string) bool { return o.FeatureGates[name] }

// Cache is the core's view of the downstream through informers; the
// namespace core implements it, the grants engine reads it. Every method is
// safe for concurrent use and answers from memory once warm.
type Cache interface {
	// Lister returns a lister for a resource, starting its informer on first
	// use and waiting (bounded by ctx) for it to sync. It fails for a
	// resource discovery does not list or that cannot be listed and watched.
	Lister(ctx context.Context, gvr schema.GroupVersionResource) (cache.GenericLister, error)
	// Resource resolves a group/resource (version may be empty: the
	// preferred one) from live discovery, which follows CRDs installed later.
	Resource(group, version, resource string) (ResourceInfo, bool)
	// ClusterScoped lists every discovered cluster-scoped resource.
	ClusterScoped() []ResourceInfo
	// Discovered lists every discovered resource in every served version,
	// namespaced ones included, in the grants engine's terms: the engine
	// validates settings objects against it as the status controller does.
	// The slice is shared; callers must not modify it.
	Discovered() []rules.Resource
}

// ResourceInfo is one discovered resource.
type ResourceInfo struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      []string
}

// Tenancy answers who the caller is in Capsule's terms; the namespace core
// implements it from the cached Tenants, namespaces and CapsuleConfiguration.
type Tenancy interface {
	// IsTenantUser: the caller is listed by the CapsuleConfiguration's users
	// (its status), or is a ServiceAccount owning a tenant.
	IsTenantUser(c Caller) bool
	// Ignored: --ignored-username / --ignored-user-group match; such callers
	// are forwarded unfiltered with their own identity.
	Ignored(c Caller) bool
	// OwnedTenants are the names of the tenants the caller owns (as User,
	// Group or ServiceAccount), sorted.
	OwnedTenants(c Caller) []string
	// TenantNamespaces lists a tenant's namespaces (ownerReference or one of
	// the two tenant labels), sorted.
	TenantNamespaces(tenant string) []string
	// NamespaceTenant names the tenant a namespace belongs to, if any.
	NamespaceTenant(ns string) (string, bool)
}

// The grants engine implements these methods on *Core (in clusterscoped*.go,
// reviews*.go and nodes*.go). Each returns false when it does not handle the
// request, and the router then goes on (finally forwarding impersonated);
// once it has written a response it returns true. A handler never forwards a
// request after writing an error.
//
//	func (c *Core) serveClusterScoped(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool
//	func (c *Core) serveAccessReview(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool
//	func (c *Core) serveNodeDescribe(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool
//
// The namespace core implements, for the grants engine's use:
//
//	func (c *Core) forward(w http.ResponseWriter, r *http.Request, caller Caller)       // impersonated, downstream RBAC decides
//	func (c *Core) forwardAsProvider(w http.ResponseWriter, r *http.Request, caller Caller) // the provider's own credential; logs the caller
//	func writeStatus(w http.ResponseWriter, r *http.Request, err error)                  // Kubernetes Status JSON from an apierrors error
//	c.cache Cache; c.tenancy Tenancy; c.opts Options
type routeHandler func(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool

var _ = routeHandler(nil)
