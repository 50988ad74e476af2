package objsize

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/fairness"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Bounds of the table (see the package doc).
const (
	// Threshold is the smallest stored size remembered: four write seats
	// (fairness.WriteBytesPerSeat). Smaller objects are weighed by their
	// request's body, as before.
	Threshold = 4 * fairness.WriteBytesPerSeat
	// PerTenant is how many objects one tenant's table remembers: 1,024
	// objects of at least 32 KiB each, 32 MiB and more of big objects,
	// beyond what most tenants ever store.
	PerTenant = 1024
	// Total is how many objects the hub remembers, about 200 bytes each.
	Total = 100_000
)

// Resolve names a /clusters/<raw> segment's (or a logical cluster id's)
// workspace from memory: its id and its path.
type Resolve func(raw string) (cluster.ID, cluster.Path, bool)

// May reports whether the caller in ctx may make the request info
// describes in workspace id.
type May func(ctx context.Context, id cluster.ID, info *request.RequestInfo) bool

// Table is the stored size of each big object, by etcd key (without the
// storage prefix: /<group>/<resource>/<cluster>/[<namespace>/]<name>).
// It implements hub/storage's ObjectSizes (learning) and hub/fairness's
// StoredSizes (weighing).
type Table struct {
	resolve Resolve
	// may, when set, reports whether the caller may make the request
	// (the hub's authorizer); it lets a caller of another tenant be
	// weighed by what she may read or rewrite anyway.
	may              May
	perTenant, total int

	mu      sync.Mutex
	entries map[string]*entry
	tenants map[string]map[string]*entry
}

type entry struct {
	size   int64
	tenant string
}

// NewTable returns an empty table with the package's bounds. may (nil:
// nobody) says whether a caller of another tenant than the workspace's
// may make a request, to weigh it by the object's size too.
func NewTable(resolve Resolve, may May) *Table {
	t := newTable(resolve, PerTenant, Total)
	t.may = may
	return t
}

func newTable(resolve Resolve, perTenant, total int) *Table {
	return &Table{resolve: resolve, perTenant: max(perTenant, 1), total: max(total, 1),
		entries: map[string]*entry{}, tenants: map[string]map[string]*entry{}}
}

// tenantOf names the tenant of a workspace as hub/fairness's Keyer names
// its callers: the tree of its path. A cluster not known in memory (yet)
// is a tenant of its own.
func (t *Table) tenantOf(raw string) string {
	if t.resolve != nil {
		if _, p, ok := t.resolve(raw); ok && p != "" {
			return "tree:" + string(fairness.TreeOf(p))
		}
	}
	return "cluster:" + raw
}

// clusterOfKey returns the cluster segment of a relative etcd key.
func clusterOfKey(key string) (string, bool) {
	// "", group, resource, cluster, rest
	segs := strings.SplitN(key, "/", 5)
	if len(segs) < 5 || segs[0] != "" || segs[3] == "" {
		return "", false
	}
	return segs[3], true
}

// Stored notes that the value at key is n bytes: written to etcd when
// written, else read from it (then it may only raise what is known).
func (t *Table) Stored(key string, n int, written bool) {
	size := int64(n)
	if size < Threshold {
		if written {
			t.forget(key)
		}
		return
	}
	id, ok := clusterOfKey(key)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[key]; e != nil {
		if written || size > e.size {
			e.size = size
		}
		return
	}
	tenant := t.tenantOf(id)
	e := &entry{size: size, tenant: tenant}
	t.entries[key] = e
	set := t.tenants[tenant]
	if set == nil {
		set = map[string]*entry{}
		t.tenants[tenant] = set
	}
	set[key] = e
	if len(set) > t.perTenant {
		t.evictSmallestLocked(tenant)
	}
	if len(t.entries) > t.total {
		t.evictSmallestLocked(t.largestTenantLocked())
	}
	remembered.Set(float64(len(t.entries)))
}

func (t *Table) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[key]; e != nil {
		t.removeLocked(key, e)
		remembered.Set(float64(len(t.entries)))
	}
}

func (t *Table) removeLocked(key string, e *entry) {
	delete(t.entries, key)
	if set := t.tenants[e.tenant]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(t.tenants, e.tenant)
		}
	}
}

// evictSmallestLocked forgets tenant's smallest entry: a scan of at most
// PerTenant entries, only when a tenant or the hub is over its bound.
func (t *Table) evictSmallestLocked(tenant string) {
	var key string
	var small *entry
	for k, e := range t.tenants[tenant] {
		if small == nil || e.size < small.size {
			key, small = k, e
		}
	}
	if small != nil {
		t.removeLocked(key, small)
		evicted.Inc()
	}
}

func (t *Table) largestTenantLocked() string {
	var most string
	n := -1
	for tenant, set := range t.tenants {
		if len(set) > n {
			most, n = tenant, len(set)
		}
	}
	return most
}

// Size returns the remembered stored size of the value at key.
func (t *Table) Size(key string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[key]; e != nil {
		return e.size, true
	}
	return 0, false
}

// StoredSize is the stored size of the object info names, when it is
// known and tenant owns the workspace the request targets, or the
// caller may make the request there anyway (see the package doc: never
// for a caller who may not, so that her width tells her nothing).
func (t *Table) StoredSize(ctx context.Context, tenant string, info *request.RequestInfo) (int64, bool) {
	if !info.IsResourceRequest || info.Name == "" || tenant == "" {
		return 0, false
	}
	target, ok := cluster.TargetFrom(ctx)
	if !ok || target.IsWildcard() || t.resolve == nil {
		return 0, false
	}
	id, p, ok := t.resolve(target.Raw)
	if !ok || p == "" {
		return 0, false
	}
	key := wstorage.ResourcePrefix(info.APIGroup, info.Resource) + "/" + string(id)
	if info.Namespace != "" {
		key += "/" + info.Namespace
	}
	size, ok := t.Size(key + "/" + info.Name)
	if !ok {
		return 0, false
	}
	// Another tenant's caller (a person granted access to this
	// workspace) is weighed only when she may make the request: whoever
	// may not gets the width of a missing object. Asked only for a big
	// object, so ordinary requests never pay for it.
	if "tree:"+string(fairness.TreeOf(p)) != tenant && (t.may == nil || !t.may(ctx, id, info)) {
		return 0, false
	}
	return size, true
}
