package resourceproxy

import (
	"sync"

	"github.com/wharfhub/wharf/sdk/fairqueue"
)

// Route is how one client workspace's group/version is proxied.
type Route struct {
	// Cluster is the client's logical cluster id.
	Cluster string
	Group   string
	Version string
	Target  Target
	Mode    AccessMode
	// Resources are the explicit entries (plural names), sorted; Wildcard
	// is set for a * entry. They shape fallback discovery only: the
	// target's RBAC decides which kinds a client may use.
	Resources []string
	Wildcard  bool
	// Proxy is the ResourceProxy that defined the route.
	Proxy string
}

// GroupVersion is "<group>/<version>".
func (r *Route) GroupVersion() string { return r.Group + "/" + r.Version }

// Routes is the routing table: logical cluster → group/version → route.
// The controller replaces a cluster's routes as a whole; the proxy reads.
// Keyed on the cluster id, so one workspace's proxies never route another's
// requests.
type Routes struct {
	mu sync.RWMutex
	// byCluster is cluster id → "<group>/<version>" → route.
	byCluster map[string]map[string]*Route
	// paths is each cluster's workspace path as the hub asserted it on
	// requests (X-Kedge-Tenant), for the target-is-client check: a
	// cluster id alone does not tell its path.
	paths map[string]string
}

// NewRoutes returns an empty table.
func NewRoutes() *Routes { return &Routes{byCluster: map[string]map[string]*Route{}} }

// Set replaces the routes of one cluster; nil or empty removes them.
func (t *Routes) Set(cluster string, routes map[string]*Route) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(routes) == 0 {
		delete(t.byCluster, cluster)
		return
	}
	t.byCluster[cluster] = routes
}

// Get returns the route of cluster's group/version, or nil.
func (t *Routes) Get(cluster, group, version string) *Route {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byCluster[cluster][group+"/"+version]
}

// Group returns the routes of one group in a cluster, for /apis/<group>.
func (t *Routes) Group(cluster, group string) []*Route {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*Route
	for _, r := range t.byCluster[cluster] {
		if r.Group == group {
			out = append(out, r)
		}
	}
	return out
}

// SetPath records a cluster's path.
func (t *Routes) SetPath(cluster, path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paths == nil {
		t.paths = map[string]string{}
	}
	t.paths[cluster] = path
}

// Path is a cluster's recorded path, or "".
func (t *Routes) Path(cluster string) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.paths[cluster]
}

// clusters lists the clusters that have routes.
func (t *Routes) clusters() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, 0, len(t.byCluster))
	for cl := range t.byCluster {
		out = append(out, cl)
	}
	return out
}

// tenantOf names the tenant of a cluster for the controller's fair queue:
// the tree of its path (sdk/fairqueue TreeOf) once a request through the
// hub told it, else the cluster alone. It answers from memory.
func (t *Routes) tenantOf(cluster string) string {
	if p := t.Path(cluster); p != "" {
		return "tree:" + fairqueue.TreeOf(p)
	}
	return "cluster:" + cluster
}

// Cluster returns every route of one cluster.
func (t *Routes) Cluster(cluster string) []*Route {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*Route, 0, len(t.byCluster[cluster]))
	for _, r := range t.byCluster[cluster] {
		out = append(out, r)
	}
	return out
}
