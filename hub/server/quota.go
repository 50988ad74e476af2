package server

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	wetcd "github.com/wharfhub/wharf/hub/etcd"
	"github.com/wharfhub/wharf/hub/quota"
	wstorage "github.com/wharfhub/wharf/hub/storage"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// storageQuota is the hub's per-workspace and per-tenant storage
// accounting (hub/quota).
type storageQuota struct {
	accountant *quota.Accountant
	ceilings   *quota.Ceilings
	reconciler *quota.Reconciler
	admission  *quota.Admission
	events     *quota.EventRate
}

// newStorageQuota builds the accounting before any store: the stores are
// wrapped as they are built. Admins are filled in by setAdmins once known.
func newStorageQuota(o *quota.Options, x *ExtraConfig) *storageQuota {
	ledger := quota.NewLedger(wetcd.NewWriter(x.EtcdClient), x.EtcdPrefix)
	ceilings := &quota.Ceilings{Options: *o, PathOf: x.Index.PathOf}
	return &storageQuota{
		accountant: &quota.Accountant{Ledger: ledger, Resolver: ceilings,
			Writes: quota.NewWriteRate(o.TenantWritesPerSecond, o.TenantWriteBurst, clock.RealClock{})},
		ceilings:   ceilings,
		reconciler: &quota.Reconciler{Ledger: ledger, Client: x.EtcdClient, Prefix: x.EtcdPrefix, Resolver: ceilings, Interval: o.ReconcileInterval},
		admission:  quota.NewAdmission(nil),
		events:     quota.NewEventRate(o, ceilings, nil, clock.RealClock{}),
	}
}

// purgeUsage removes purged clusters' usage records, taking what they
// recorded from their tenants' (the workspace controller's purge).
func (q *storageQuota) purgeUsage(ctx context.Context, clusters map[cluster.ID]cluster.Path) error {
	tenants := make(map[cluster.ID]string, len(clusters))
	for id, p := range clusters {
		tenants[id] = quota.TenantOf(p)
	}
	return q.accountant.Ledger.Purge(ctx, tenants)
}

func (q *storageQuota) setAdmins(a admins) {
	q.accountant.IsAdmin = a.has
	if q.accountant.Writes != nil {
		q.accountant.Writes.IsAdmin = a.has
	}
	q.admission.IsAdmin = a.has
	q.events.IsAdmin = a.has
}

// background watches Workspaces for the hub admins' overrides and
// reconciles usage; the overrides gate readiness, so no write is judged
// by the flags alone where an override exists.
func (q *storageQuota) background(ws *workspaces.REST) ([]background, error) {
	inf, err := wstorage.NewClusterInformer(ws, &tenancyv1alpha1.Workspace{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	if err := q.ceilings.Watch(inf); err != nil {
		return nil, err
	}
	return []background{
		{name: "wharf-quota-overrides", run: func(ctx context.Context) { inf.RunWithContext(ctx) }, synced: inf.HasSynced},
		{name: "wharf-quota-reconciler", run: func(ctx context.Context) {
			if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				q.reconciler.Run(ctx)
			}
			// Write what was admitted from grants and not yet recorded,
			// so that a restart does not wait for the reconciler.
			q.reconciler.Ledger.Flush()
		}},
	}, nil
}
