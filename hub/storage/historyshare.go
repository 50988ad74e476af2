package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/lru"

	"github.com/wharfhub/wharf/hub/cluster"
)

// One tenant's share of a watch cache's history.
//
// The history bound (history.go) relists a resource's cache once the
// replaced and deleted objects it holds pass HistoryLimit.Bytes, and a
// relist closes every watch of that resource, everybody's. A tenant
// rewriting three 900 KB ConfigMaps with tiny patches passed the 32 MiB
// bound in seconds, again every minute, and closed another tenant's
// watches each time; his re-watches got 429 "(re)initializing" (outside
// review 3, C-C). So the history is attributed to the tenant whose
// workspace the object is in, and a tenant whose share of one resource's
// history is used up gets 429 for her writes of large objects of that
// resource until the history forgets them (upstream's window: new events
// and 75 s) or a relist empties it. Her writes of small objects, and
// her deletes, are never refused: they cannot fill the history, and
// they let it move on. The bound, and its relist, stay for what several
// tenants together, or deletes of what a tenant stored, put there.

// Defaults of the share.
const (
	// historyShareDivisor: a tenant may hold a quarter of the bound, so
	// that what she has in flight when it is reached (admission runs
	// before the write; the history learns of it from etcd's watch
	// afterwards) and what her deletes add stay below the bound.
	historyShareDivisor = 4
	// historySmallObject: writes of objects smaller than this (new and
	// replaced) are never refused.
	historySmallObject = 16 << 10
	// historyRetryAfter is the Retry-After of a refusal, in seconds.
	historyRetryAfter  = 10
	historyTenantCache = 16384
	// historyLargestObject is more than etcd stores in one value (its
	// request limit is 1.5 MiB).
	historyLargestObject = 3 << 20
)

// HistoryShares attributes each watch cache's history to tenants and
// refuses a tenant's large writes once her share of a resource's is
// used. The zero of a nil *HistoryShares refuses nothing.
type HistoryShares struct {
	share int64

	mu sync.Mutex
	// tenants maps the clusters that admission saw to their tenant; the
	// history attributes an event by its object's cluster.
	tenants *lru.Cache
	caches  map[schema.GroupResource][]*boundedHistory
}

// NewHistoryShares returns the shares of a history bound of bytes; nil
// when there is no bound.
func NewHistoryShares(bytes int64) *HistoryShares {
	if bytes <= 0 {
		return nil
	}
	return &HistoryShares{share: bytes / historyShareDivisor, tenants: lru.New(historyTenantCache), caches: map[schema.GroupResource][]*boundedHistory{}}
}

func (s *HistoryShares) register(gr schema.GroupResource, b *boundedHistory) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caches[gr] = append(s.caches[gr], b)
}

// unregister forgets a destroyed cache (a custom resource's, when its
// definition changes).
func (s *HistoryShares) unregister(gr schema.GroupResource, b *boundedHistory) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caches[gr] = slices.DeleteFunc(s.caches[gr], func(x *boundedHistory) bool { return x == b })
	if len(s.caches[gr]) == 0 {
		delete(s.caches, gr)
	}
}

func (s *HistoryShares) learn(id cluster.ID, tenant string) {
	if s == nil || id == "" || tenant == "" {
		return
	}
	if t, ok := s.tenants.Get(id); ok && t == tenant {
		return
	}
	s.tenants.Add(id, tenant)
}

// ownerOf is the tenant of the object's cluster, "" if unknown.
func (s *HistoryShares) ownerOf(obj runtime.Object) string {
	if s == nil || obj == nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	id := m.GetAnnotations()[ClusterAnnotation]
	if id == "" {
		return ""
	}
	if t, ok := s.tenants.Get(cluster.ID(id)); ok {
		return t.(string)
	}
	return ""
}

// held is what tenant holds in the histories of gr's caches.
func (s *HistoryShares) held(gr schema.GroupResource, tenant string) int64 {
	s.mu.Lock()
	caches := slices.Clone(s.caches[gr])
	s.mu.Unlock()
	var n int64
	for _, b := range caches {
		n += b.heldBy(tenant)
	}
	return n
}

// HistoryAdmission refuses a tenant's creates and updates of large
// objects while her share of the resource's watch cache history is used
// (see above). Hub admins and system:masters are exempt, as are dry runs
// (they write nothing).
type HistoryAdmission struct {
	*admission.Handler
	shares  *HistoryShares
	isAdmin func(user.Info) bool
	// tenantOf is the tenant of a workspace ("" if unknown).
	tenantOf func(context.Context, cluster.ID) string
}

var _ admission.ValidationInterface = &HistoryAdmission{}

// NewHistoryAdmission returns the plugin.
func NewHistoryAdmission(s *HistoryShares, isAdmin func(user.Info) bool, tenantOf func(context.Context, cluster.ID) string) *HistoryAdmission {
	return &HistoryAdmission{Handler: admission.NewHandler(admission.Create, admission.Update), shares: s, isAdmin: isAdmin, tenantOf: tenantOf}
}

// Validate implements admission.ValidationInterface.
func (a *HistoryAdmission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.shares == nil || attrs.IsDryRun() || a.exempt(attrs.GetUserInfo()) {
		return nil
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return nil
	}
	tenant := a.tenantOf(ctx, id)
	if tenant == "" {
		return nil
	}
	a.shares.learn(id, tenant)
	gr := attrs.GetResource().GroupResource()
	held := a.shares.held(gr, tenant)
	if held+historyLargestObject <= a.shares.share {
		// No object could use up the share: do not size this one.
		return nil
	}
	size := max(objectSize(attrs.GetObject()), objectSize(attrs.GetOldObject()))
	if size < historySmallObject || held+size <= a.shares.share {
		return nil
	}
	historyRefusals.Inc()
	return apierrors.NewTooManyRequests(fmt.Sprintf("this tenant's recent writes of large %s fill its share of the hub's watch cache history; retry later, or write smaller objects", gr.String()), historyRetryAfter)
}

func (a *HistoryAdmission) exempt(u user.Info) bool {
	if u == nil {
		return false
	}
	if slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return true
	}
	return a.isAdmin != nil && a.isAdmin(u)
}

// objectSize is about what the object takes in a cache: its protobuf
// size when it has one, else its JSON size.
func objectSize(obj runtime.Object) int64 {
	if obj == nil {
		return 0
	}
	if p, ok := obj.(interface{ Size() int }); ok {
		return int64(p.Size())
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	return int64(len(b))
}
