package fairqueue

import (
	"net/http"
	"strings"
	"sync"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/clusters"
)

// TreeOf returns the top of a workspace path's tenant tree, the rule of
// the hub's hub/fairness TreeOf: root:users:<label> for a home and
// everything below it, root:<label> for every other top-level workspace
// and its descendants, and the path itself for root and root:users.
func TreeOf(path string) string {
	segs := strings.Split(path, ":")
	switch {
	case len(segs) > 2 && segs[0] == "root" && segs[1] == "users":
		return strings.Join(segs[:3], ":")
	case len(segs) >= 2:
		return strings.Join(segs[:2], ":")
	default:
		return path
	}
}

// Tenants names the tenant of a logical cluster from the workspace paths
// it learned. The zero value is ready to use; it is safe for concurrent
// use and answers from memory, never blocking (a queue calls it under its
// lock).
type Tenants struct {
	mu    sync.RWMutex
	paths map[string]string
}

// Learn records the workspace path of a logical cluster. Only the hub may
// be the source: the path from a request's verified identity
// (sdk.Identity Tenant and Cluster), never one from an object or a
// caller's own header.
func (t *Tenants) Learn(cluster, path string) {
	if cluster == "" || path == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paths == nil {
		t.paths = map[string]string{}
	}
	t.paths[cluster] = path
}

// Of returns the tenant of a logical cluster: "tree:<TreeOf(path)>" once
// its path is known, else "cluster:<id>", a tenant of its own.
func (t *Tenants) Of(cluster string) string {
	t.mu.RLock()
	p := t.paths[cluster]
	t.mu.RUnlock()
	if p == "" {
		return "cluster:" + cluster
	}
	return "tree:" + TreeOf(p)
}

// OfKey is Of the cluster of a store key of sdk/clusters
// ("<cluster>|<namespace>/<name>"), the TenantOf of a queue of such keys.
// A malformed key is a tenant of its own.
func (t *Tenants) OfKey(key string) string {
	cluster, _, _, err := clusters.SplitKey(key)
	if err != nil {
		return "malformed:"
	}
	return t.Of(cluster)
}

// Middleware learns the path of the active workspace of every request
// the hub forwards to the provider's backend (the identity headers the
// hub sets after stripping the caller's own), then serves next.
func (t *Tenants) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := sdk.IdentityFrom(r); ok {
			t.Learn(id.Cluster, id.Tenant)
		}
		next.ServeHTTP(w, r)
	})
}
