package rbac

import (
	"context"
	"maps"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
)

// Write-back. Upstream's clusterrole-aggregation controller stores the
// union of the selected roles' rules in an aggregated ClusterRole's .rules,
// so `kubectl get clusterrole admin -o yaml` shows them. The hub decides
// from its by-reference aggregation (aggregate.go), never from those stored
// rules; it writes them back only so that readers see what upstream shows.
//
// Each write-back is the hub's, per logical cluster: a worker takes one
// cluster from the queue, computes from that cluster's partition alone
// what each of its aggregated roles should hold, and writes through the
// hub's own ClusterRole storage in that cluster (RulesWriter). Stored
// rules of aggregated roles therefore come from the hub only (the RBAC
// registry keeps tenants' writes from setting them), and the RBAC quota
// does not count them against the tenant (UsageOfClusterRole). Instead the
// rules written back per cluster are bounded by WriteBackBudget, so that
// aggregation cannot amplify what a tenant stores: roles beyond the budget
// keep the rules they have (they still grant what they aggregate).

// RulesWriter stores rules as the .rules of aggregated ClusterRole name in
// cluster id, as the hub. It must fail if the role no longer has an
// aggregationRule.
type RulesWriter func(ctx context.Context, id cluster.ID, name string, rules []rbacv1.PolicyRule) error

// writeBackWorkers is how many clusters are written back at once; as for
// aggregation, one cluster occupies one worker at most.
const writeBackWorkers = 2

// writeBack is one pending .rules update.
type writeBack struct {
	name  string
	rules []rbacv1.PolicyRule
}

// pendingWriteBacks lists, in name order, the aggregated ClusterRoles of
// cluster id whose stored rules differ from what they grant, with the
// rules to store, while the total stays within budget (0: no bound). As
// re-aggregation, it copies the partition's maps (pointers only) under its
// read lock and computes without any lock: flattening a tenant's roles
// must not hold up the informer handler that every workspace shares.
func (x *index) pendingWriteBacks(id cluster.ID, budget int) (out []writeBack, skipped []string) {
	var (
		roles map[string]*rbacv1.ClusterRole
		agg   aggregation
	)
	x.read(id, func(ci *clusterIndex) {
		if ci.gen != ci.aggGen {
			return // a newer aggregation is on its way and will come back here
		}
		// aggregated is replaced, never changed in place, on every swap.
		roles, agg = maps.Clone(ci.clusterRoles), ci.aggregated
	})
	snap := &clusterIndex{clusterRoles: roles, aggregated: agg}
	names := slices.Sorted(maps.Keys(agg))
	total := 0
	for _, name := range names {
		cr, ok := roles[name]
		if !ok || cr.AggregationRule == nil {
			continue
		}
		lists, _ := snap.clusterRoleRules(name)
		want := flatten(lists)
		if budget > 0 && total+len(want) > budget {
			skipped = append(skipped, name)
			continue
		}
		total += len(want)
		if len(want) == 0 && len(cr.Rules) == 0 || equality.Semantic.DeepEqual(want, cr.Rules) {
			continue
		}
		out = append(out, writeBack{name: name, rules: want})
	}
	return out, skipped
}

// EnableWriteBack makes the authorizer write aggregated rules back through
// w after every aggregation of a cluster, within budget rules per cluster
// (0: no bound). The write-back queue takes turns between tenants
// (tenantOf, nil: one tenant), so one tenant's churn of aggregated roles
// delays only its own write-backs. Call it before Run.
func (a *Authorizer) EnableWriteBack(w RulesWriter, budget int, tenantOf controller.TenantOfCluster) {
	a.writeBack = w
	a.writeBackBudget = budget
	a.writeBackQueue = controller.NewFair(controller.FairConfig[cluster.ID]{
		Name:        "wharf_rbac_writeback",
		TenantOf:    tenantOf,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[cluster.ID](100*time.Millisecond, time.Minute),
	})
	a.idx.swapped = func(id cluster.ID) { a.writeBackQueue.Add(id) }
	if tenantOf != nil && a.queue != nil {
		// Aggregation itself takes turns too; nothing has been queued yet
		// (the informers start in Run).
		a.queue.ShutDown()
		a.queue = controller.NewFairQueue("wharf_rbac_aggregation", tenantOf)
	}
}

// runWriteBack serves the write-back queue until ctx is done.
func (a *Authorizer) runWriteBack(ctx context.Context) {
	if a.writeBackQueue == nil {
		return
	}
	for range writeBackWorkers {
		go func() {
			for {
				id, shutdown := a.writeBackQueue.Get()
				if shutdown {
					return
				}
				if err := a.writeBackCluster(ctx, id); err != nil {
					klog.FromContext(ctx).Error(err, "Writing aggregated ClusterRole rules back", "cluster", id)
					a.writeBackQueue.AddRateLimited(id)
				} else {
					a.writeBackQueue.Forget(id)
				}
				a.writeBackQueue.Done(id)
			}
		}()
	}
	<-ctx.Done()
	a.writeBackQueue.ShutDown()
}

// writeBackCluster writes back every stale aggregated role of cluster id.
// A write changes a ClusterRole, so the cluster is re-aggregated and comes
// back here; then nothing differs and nothing is written.
func (a *Authorizer) writeBackCluster(ctx context.Context, id cluster.ID) error {
	pending, skipped := a.idx.pendingWriteBacks(id, a.writeBackBudget)
	if len(skipped) > 0 {
		klog.FromContext(ctx).Info("Aggregated ClusterRoles over the write-back budget keep their stored rules",
			"cluster", id, "clusterRoles", skipped, "budget", a.writeBackBudget)
	}
	var errs []error
	for _, p := range pending {
		if err := a.writeBack(ctx, id, p.name, p.rules); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
