package quota

import (
	"context"
	"encoding/json"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/etcd"
)

// The ledger's reads and writes of its etcd records.

// current returns the cached records of keys, reading the missing ones.
func (l *Ledger) current(ctx context.Context, keys []string) (map[string]cached, error) {
	out := make(map[string]cached, len(keys))
	var missing []string
	l.mu.Lock()
	for _, k := range keys {
		if v, ok := l.known[k]; ok {
			out[k] = v
		} else {
			missing = append(missing, k)
		}
	}
	l.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	// One snapshot per etcd.MaxTxnOps keys: the CAS that follows checks
	// every revision, so reads need not be of one instant.
	for from := 0; from < len(missing); from += etcd.MaxTxnOps {
		part := missing[from:min(from+etcd.MaxTxnOps, len(missing))]
		ops := make([]clientv3.Op, len(part))
		for i, k := range part {
			ops[i] = clientv3.OpGet(k)
		}
		resp, err := l.w.Txn(ctx, part[0], func(t clientv3.Txn) clientv3.Txn { return t.Then(ops...) }, nil)
		if err != nil {
			return nil, err
		}
		l.learn(part, resp.Responses)
	}
	l.mu.Lock()
	for _, k := range missing {
		out[k] = l.known[k]
	}
	l.mu.Unlock()
	return out, nil
}

// learn caches the results of one Get per key.
func (l *Ledger) learn(keys []string, resps []*etcdserverpb.ResponseOp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, k := range keys {
		if i >= len(resps) {
			return
		}
		r := resps[i].GetResponseRange()
		if r == nil || len(r.Kvs) == 0 {
			l.known[k] = cached{}
			continue
		}
		var rec record
		if err := json.Unmarshal(r.Kvs[0].Value, &rec); err != nil {
			klog.ErrorS(err, "Unreadable usage record; counting from zero until the reconciler rewrites it", "key", k)
		}
		l.known[k] = cached{rec: rec, rev: r.Kvs[0].ModRevision}
	}
}

// swap writes next over keys if none changed since cur; on a failed
// compare it refreshes the cache from the Else branch.
func (l *Ledger) swap(ctx context.Context, keys []string, cur map[string]cached, next map[string]record, purged map[string]bool) (bool, error) {
	cmps := make([]clientv3.Cmp, len(keys))
	puts := make([]clientv3.Op, 0, len(keys))
	gets := make([]clientv3.Op, len(keys))
	var firstVal []byte
	for i, k := range keys {
		cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", cur[k].rev)
		gets[i] = clientv3.OpGet(k)
		if purged[k] {
			// Not written back; the compare holds it absent.
			continue
		}
		rec := next[k]
		rec.Writer = l.nextWriter()
		next[k] = rec
		val, err := json.Marshal(rec)
		if err != nil {
			return false, err
		}
		if i == 0 {
			firstVal = val
		}
		puts = append(puts, clientv3.OpPut(k, string(val)))
	}
	resolve := etcd.FirstChangeIs(keys[0], cur[keys[0]].rev, firstVal)
	if cur[keys[0]].rev == 0 {
		resolve = etcd.ValueIs(keys[0], firstVal, 0)
	}
	resp, err := l.w.Txn(ctx, keys[0], func(t clientv3.Txn) clientv3.Txn {
		return t.If(cmps...).Then(puts...).Else(gets...)
	}, resolve)
	if err != nil {
		return false, err
	}
	if !resp.Succeeded {
		l.learn(keys, resp.Responses)
		return false, nil
	}
	l.mu.Lock()
	for _, k := range keys {
		if purged[k] {
			delete(l.known, k)
			continue
		}
		l.known[k] = cached{rec: next[k], rev: resp.Header.Revision}
	}
	l.mu.Unlock()
	return true, nil
}

// Get reads the stored usage of a cluster and its tenant, with this
// replica's unwritten changes: what is stored, not what is reserved.
func (l *Ledger) Get(ctx context.Context, id cluster.ID, tenant string) (ws, ten Usage, err error) {
	// Write the tenant's unwritten changes first: while a commit is in
	// flight, what it took from memory is in neither the records nor
	// memory, and a read then would miss it.
	_ = l.apply(&change{tenant: tenant, flush: true})
	keys := []string{l.clusterKey(id), l.tenantKey(tenant)}
	l.forget(keys...)
	cur, err := l.current(ctx, keys)
	if err != nil {
		return Usage{}, Usage{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Usage, 2)
	for i, k := range keys {
		out[i] = cur[k].rec.Usage
		if lo := l.loc[k]; lo != nil {
			out[i] = out[i].Add(lo.c).Sub(lo.f)
		}
	}
	return out[0], out[1], nil
}

// forget drops cached records, after the reconciler rewrote them.
func (l *Ledger) forget(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		delete(l.known, k)
	}
}

// nextWriter is a value unique to one write of this process.
func (l *Ledger) nextWriter() string { return fmt.Sprintf("%s-%d", l.writerID, l.seq.Add(1)) }
