package rbac

import (
	"context"
	"maps"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// aggregationWorkers is how many clusters are re-aggregated at once. The
// queue hands a cluster to one worker at a time, so a tenant who keeps
// changing ClusterRoles occupies one worker at most and the others serve
// every other workspace (attack review B6b).
const aggregationWorkers = 4

// reaggregate brings the aggregation of cluster id up to date. It copies
// the ClusterRole map (pointers only) under the partition's read lock,
// computes without any lock, and swaps the result in under the write lock
// only if no ClusterRole changed meanwhile; otherwise a newer run is
// already scheduled and this result is dropped. Readers of the partition
// therefore never wait for an aggregation, only for a map copy and a swap.
func (x *index) reaggregate(id cluster.ID) {
	var (
		snap  map[string]*rbacv1.ClusterRole
		gen   uint64
		stale bool
	)
	x.read(id, func(ci *clusterIndex) {
		if ci.gen == ci.aggGen {
			return
		}
		stale, gen, snap = true, ci.gen, maps.Clone(ci.clusterRoles)
	})
	if !stale {
		return
	}
	agg := x.compute(id, snap)
	x.mu.RLock()
	ci := x.clusters[id]
	x.mu.RUnlock()
	if ci == nil {
		return // dropped: nothing left to aggregate
	}
	ci.mu.Lock()
	done := !ci.dropped && ci.gen == gen
	if done {
		ci.aggregated, ci.aggGen = agg, gen
	}
	ci.mu.Unlock()
	if done && x.swapped != nil {
		x.swapped(id)
	}
}

// anyStale reports whether some partition's aggregation is not yet
// computed. It visits every partition, so HasSynced asks it only until the
// first time it is false.
func (x *index) anyStale() bool {
	x.mu.RLock()
	parts := make([]*clusterIndex, 0, len(x.clusters))
	for _, ci := range x.clusters {
		parts = append(parts, ci)
	}
	x.mu.RUnlock()
	for _, ci := range parts {
		ci.mu.RLock()
		stale := !ci.dropped && ci.gen != ci.aggGen
		ci.mu.RUnlock()
		if stale {
			return true
		}
	}
	return false
}

// aggregateLater schedules the re-aggregation of cluster id. Without a
// queue (the in-package test constructor) it runs at once.
func (a *Authorizer) aggregateLater(id cluster.ID) {
	if a.queue == nil {
		a.idx.reaggregate(id)
		return
	}
	a.queue.Add(id)
}

// runAggregation serves the queue until ctx is done.
func (a *Authorizer) runAggregation(ctx context.Context) {
	for range aggregationWorkers {
		go func() {
			for {
				id, shutdown := a.queue.Get()
				if shutdown {
					return
				}
				a.idx.reaggregate(id)
				a.queue.Done(id)
			}
		}()
	}
	<-ctx.Done()
	a.queue.ShutDown()
	klog.FromContext(ctx).V(2).Info("RBAC aggregation workers stopped")
}

func newAggregationQueue() workqueue.TypedInterface[cluster.ID] {
	return workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cluster.ID]{Name: "wharf_rbac_aggregation"})
}
