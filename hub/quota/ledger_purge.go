package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Purge removes the usage records of purged clusters (a deleted workspace
// and its descendants; tenants maps each to its tenant) and takes what
// each recorded from its tenant's record, in one compare-and-swap per
// tenant (txnClusters records at a time): the tenant's usage drops as the workspace goes, not at the
// reconciler's next passes (outside review row 23).
//
// It stays right under concurrent writes and across replicas:
//   - this replica's unwritten changes of the purged clusters go with
//     them at once;
//   - another replica whose changes to a purged cluster were not written yet
//     finds the cluster's record absent when it writes them, and drops
//     them from the tenant's record as well (commit, purgedOf): the purge
//     took what the record held, and what it did not hold never reached
//     the tenant's;
//   - a write that recreated a record after a purge (admitted before the
//     workspace was marked terminating) is taken by the next purge: the
//     workspace controller purges each time it removes keys.
//
// A retry after an ambiguous failure needs no resolver: a record already
// gone is not taken twice.
func (l *Ledger) Purge(ctx context.Context, tenants map[cluster.ID]string) error {
	by := map[string][]cluster.ID{}
	for id, t := range tenants {
		by[t] = append(by[t], id)
	}
	for t, ids := range by {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		// A deleted subtree may hold every workspace of the tenant: its
		// records go txnClusters at a time (etcd's --max-txn-ops), each
		// transaction taking exactly what its records held from the
		// tenant's, so that each leaves the tenant's record right.
		for len(ids) > 0 {
			n := min(len(ids), max(l.chunk, 1))
			if err := l.purge(ctx, t, ids[:n]); err != nil {
				return fmt.Errorf("purging the usage of tenant %s: %w", t, err)
			}
			ids = ids[n:]
		}
	}
	return nil
}

func (l *Ledger) purge(ctx context.Context, tenant string, ids []cluster.ID) error {
	tk := l.tenantKey(tenant)
	keys := []string{tk}
	for _, id := range ids {
		keys = append(keys, l.clusterKey(id))
	}
	// Read afresh: a record cached as absent may have been written since
	// by another replica, and must not be left behind.
	l.forget(keys...)
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		cur, err := l.current(ctx, keys)
		if err != nil {
			return err
		}
		ten := cur[tk].rec
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		gets := make([]clientv3.Op, len(keys))
		for i, k := range keys {
			gets[i] = clientv3.OpGet(k)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", cur[k].rev))
			if k != tk && cur[k].rev != 0 {
				ten.Usage = ten.Usage.Sub(cur[k].rec.Usage)
				ops = append(ops, clientv3.OpDelete(k))
			}
		}
		if len(ops) == 0 {
			return nil
		}
		if cur[tk].rev != 0 {
			ten.Writer = l.nextWriter()
			val, err := json.Marshal(ten)
			if err != nil {
				return err
			}
			ops = append(ops, clientv3.OpPut(tk, string(val)))
		}
		resp, err := l.w.Txn(ctx, tk, func(t clientv3.Txn) clientv3.Txn {
			return t.If(cmps...).Then(ops...).Else(gets...)
		}, nil)
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			l.learn(keys, resp.Responses)
			continue
		}
		l.mu.Lock()
		// This replica's unwritten changes of the purged clusters were
		// not in their records: they leave the tenant's unwritten
		// changes too, so that its usage reads right at once here.
		// (A commit in flight that took them puts them back if its
		// compare fails, and then drops them as commit does.)
		tl := l.loc[tk]
		for _, k := range keys[1:] {
			delete(l.known, k)
			if lo := l.loc[k]; lo != nil {
				if tl != nil {
					tl.c, tl.f = tl.c.Sub(lo.c), tl.f.Sub(lo.f)
				}
				delete(l.loc, k)
			}
		}
		if cur[tk].rev != 0 {
			l.known[tk] = cached{rec: ten, rev: resp.Header.Revision}
		}
		l.mu.Unlock()
		return nil
	}
	return fmt.Errorf("usage records of tenant %s kept changing", tenant)
}

// purgedOf are the cluster records among keys that a commit must not write
// back: absent (purged, or never written) and not reserved against by the
// batch. What this replica holds unwritten for them is dropped (commit).
// A record is only ever created by a reservation (grants come with one),
// so an absent record with nothing reserved is a purged one.
func purgedOf(keys []string, tk string, cur map[string]cached, reserves map[string]bool) map[string]bool {
	var out map[string]bool
	for _, k := range keys {
		if k != tk && cur[k].rev == 0 && !reserves[k] {
			if out == nil {
				out = map[string]bool{}
			}
			out[k] = true
		}
	}
	return out
}
