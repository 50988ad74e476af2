package rbac

import (
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/wharfhub/wharf/hub/cluster"
)

// index holds the RBAC objects of every logical cluster, partitioned by
// cluster so that a decision only ever looks at the request cluster's
// partition.
//
// Locking is per partition: mu guards only the map, and is never held while
// waiting for a partition's lock, so a slow write in one workspace (a
// tenant's huge aggregated ClusterRole, say) delays that workspace alone
// and never the decisions of any other. Lock order is partition, then map
// (only when an emptied partition is dropped).
type index struct {
	mu       sync.RWMutex
	clusters map[cluster.ID]*clusterIndex
	// gens numbers ClusterRole changes index-wide, so a generation is never
	// reused, not even by a partition that replaces a dropped one: an
	// aggregation computed from a snapshot is swapped in only when its
	// generation is still the partition's.
	gens atomic.Uint64
	// compute is aggregate; tests replace it to hold an aggregation in
	// progress and prove who waits for it.
	compute func(id cluster.ID, roles map[string]*rbacv1.ClusterRole) aggregation
	// swapped, when set, is told of every aggregation swapped in; for
	// tests, which wait on it instead of on a clock.
	swapped func(id cluster.ID)
}

func newIndex() *index {
	return &index{
		clusters: make(map[cluster.ID]*clusterIndex),
		compute:  func(_ cluster.ID, roles map[string]*rbacv1.ClusterRole) aggregation { return aggregate(roles) },
	}
}

// update runs fn on the partition of id, creating it if needed and dropping
// it again when fn leaves it empty, so deleted workspaces cost nothing.
func (x *index) update(id cluster.ID, fn func(ci *clusterIndex)) {
	for {
		x.mu.Lock()
		ci := x.clusters[id]
		if ci == nil {
			ci = newClusterIndex(&x.gens)
			x.clusters[id] = ci
		}
		x.mu.Unlock()

		ci.mu.Lock()
		if ci.dropped {
			// Emptied and dropped between our lookup and our lock: its
			// successor (or a new partition) is in the map now.
			ci.mu.Unlock()
			continue
		}
		fn(ci)
		if ci.empty() {
			ci.dropped = true
			x.mu.Lock()
			if x.clusters[id] == ci {
				delete(x.clusters, id)
			}
			x.mu.Unlock()
		}
		ci.mu.Unlock()
		return
	}
}

// read runs fn on the partition of id under the partition's read lock. fn
// is not called when the cluster holds no RBAC objects at all.
func (x *index) read(id cluster.ID, fn func(ci *clusterIndex)) {
	x.mu.RLock()
	ci := x.clusters[id]
	x.mu.RUnlock()
	if ci == nil {
		return
	}
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	if !ci.dropped {
		fn(ci)
	}
}

// size returns the number of clusters holding RBAC objects.
func (x *index) size() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.clusters)
}

type subjectKind uint8

const (
	userSubject subjectKind = iota
	groupSubject
)

// subjectKey is what a binding subject is filed under. ServiceAccount
// subjects become the user name the authenticator gives the account, so a
// lookup needs only the request's user name and groups.
type subjectKey struct {
	kind subjectKind
	name string
}

type nsName struct{ namespace, name string }

type nsSubject struct {
	namespace string
	subject   subjectKey
}

// subjectKeyOf maps a binding subject to its key. A ServiceAccount without a
// namespace defaults to the binding's namespace; in a ClusterRoleBinding
// (bindingNS "") it matches nobody, as upstream. Unknown kinds match nobody.
func subjectKeyOf(s rbacv1.Subject, bindingNS string) (subjectKey, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return subjectKey{userSubject, s.Name}, true
	case rbacv1.GroupKind:
		return subjectKey{groupSubject, s.Name}, true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNS
		}
		if ns == "" {
			return subjectKey{}, false
		}
		return subjectKey{userSubject, serviceaccount.MakeUsername(ns, s.Name)}, true
	}
	return subjectKey{}, false
}

// clusterIndex is one logical cluster's RBAC state. Bindings are filed by
// subject so that a decision visits only bindings that name the user or one
// of their groups, however many bindings the cluster has.
type clusterIndex struct {
	// mu guards every field below. dropped is set once the partition has
	// left the index: a holder of a stale pointer must look it up again.
	mu      sync.RWMutex
	dropped bool

	roles        map[nsName]*rbacv1.Role
	clusterRoles map[string]*rbacv1.ClusterRole
	// aggregated names, per ClusterRole with an aggregationRule, the plain
	// ClusterRoles whose rules it grants. It is recomputed from a snapshot
	// outside the lock after ClusterRole changes (index.reaggregate) and is
	// current when aggGen == gen.
	aggregated  aggregation
	gen, aggGen uint64
	gens        *atomic.Uint64
	// usage counts what the workspace stores, for the RBAC quota.
	usage Usage

	crbs         map[string]*rbacv1.ClusterRoleBinding
	crbBySubject map[subjectKey]map[string]*rbacv1.ClusterRoleBinding
	rbs          map[nsName]*rbacv1.RoleBinding
	rbBySubject  map[nsSubject]map[string]*rbacv1.RoleBinding
}

func newClusterIndex(gens *atomic.Uint64) *clusterIndex {
	return &clusterIndex{
		gens:         gens,
		roles:        map[nsName]*rbacv1.Role{},
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		crbs:         map[string]*rbacv1.ClusterRoleBinding{},
		crbBySubject: map[subjectKey]map[string]*rbacv1.ClusterRoleBinding{},
		rbs:          map[nsName]*rbacv1.RoleBinding{},
		rbBySubject:  map[nsSubject]map[string]*rbacv1.RoleBinding{},
	}
}

func (ci *clusterIndex) empty() bool {
	return len(ci.roles) == 0 && len(ci.clusterRoles) == 0 && len(ci.crbs) == 0 && len(ci.rbs) == 0
}

func (ci *clusterIndex) putRole(ns string, r *rbacv1.Role) {
	ci.deleteRole(ns, r.Name)
	ci.roles[nsName{ns, r.Name}] = r
	ci.usage.Rules += len(r.Rules)
}

func (ci *clusterIndex) deleteRole(ns, name string) {
	if old, ok := ci.roles[nsName{ns, name}]; ok {
		ci.usage.Rules -= len(old.Rules)
		delete(ci.roles, nsName{ns, name})
	}
}

// putClusterRole files r and marks the aggregation stale; the caller
// schedules index.reaggregate. Nothing expensive happens under the lock.
func (ci *clusterIndex) putClusterRole(r *rbacv1.ClusterRole) {
	ci.dropClusterRole(r.Name)
	ci.clusterRoles[r.Name] = r
	ci.usage.add(UsageOfClusterRole(r))
	ci.gen = ci.gens.Add(1)
}

func (ci *clusterIndex) deleteClusterRole(name string) {
	if ci.dropClusterRole(name) {
		ci.gen = ci.gens.Add(1)
	}
}

func (ci *clusterIndex) dropClusterRole(name string) bool {
	old, ok := ci.clusterRoles[name]
	if !ok {
		return false
	}
	ci.usage.sub(UsageOfClusterRole(old))
	delete(ci.clusterRoles, name)
	return true
}

func (ci *clusterIndex) putClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	ci.deleteClusterRoleBinding(b.Name)
	ci.crbs[b.Name] = b
	for _, s := range b.Subjects {
		if k, ok := subjectKeyOf(s, ""); ok {
			fileUnder(ci.crbBySubject, k, b.Name, b)
		}
	}
}

func (ci *clusterIndex) deleteClusterRoleBinding(name string) {
	old, ok := ci.crbs[name]
	if !ok {
		return
	}
	delete(ci.crbs, name)
	for _, s := range old.Subjects {
		if k, ok := subjectKeyOf(s, ""); ok {
			unfile(ci.crbBySubject, k, name)
		}
	}
}

func (ci *clusterIndex) putRoleBinding(ns string, b *rbacv1.RoleBinding) {
	ci.deleteRoleBinding(ns, b.Name)
	ci.rbs[nsName{ns, b.Name}] = b
	for _, s := range b.Subjects {
		if k, ok := subjectKeyOf(s, ns); ok {
			fileUnder(ci.rbBySubject, nsSubject{ns, k}, b.Name, b)
		}
	}
}

func (ci *clusterIndex) deleteRoleBinding(ns, name string) {
	old, ok := ci.rbs[nsName{ns, name}]
	if !ok {
		return
	}
	delete(ci.rbs, nsName{ns, name})
	for _, s := range old.Subjects {
		if k, ok := subjectKeyOf(s, ns); ok {
			unfile(ci.rbBySubject, nsSubject{ns, k}, name)
		}
	}
}

func fileUnder[K comparable, V any](m map[K]map[string]V, k K, name string, v V) {
	set := m[k]
	if set == nil {
		set = make(map[string]V, 1)
		m[k] = set
	}
	set[name] = v
}

func unfile[K comparable, V any](m map[K]map[string]V, k K, name string) {
	set := m[k]
	delete(set, name)
	if len(set) == 0 {
		delete(m, k)
	}
}
