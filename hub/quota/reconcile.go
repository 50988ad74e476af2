package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// scanPage bounds the keys one range read returns: values are read too
// (their size is the usage), and objects may be 1.5 MB.
const scanPage = 128

// Reconciler recomputes usage from the stored keys and corrects the
// records by the difference (see the package doc).
type Reconciler struct {
	Ledger *Ledger
	Client *clientv3.Client
	// Prefix is the storage prefix (normally /registry).
	Prefix   string
	Resolver *Ceilings
	Interval time.Duration

	// seen is the drift of each record found by the previous pass. Only
	// drift seen twice is corrected, by the smaller amount: a write in
	// flight at a snapshot (admitted, not yet written to its record) is
	// drift of one pass only.
	seen map[string]Usage
}

// Run reconciles every Interval until ctx is done.
func (r *Reconciler) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := r.Once(ctx); err != nil {
			klog.ErrorS(err, "Reconciling stored usage")
		}
	}, r.Interval)
}

// Once recomputes every record from one snapshot of the store.
func (r *Reconciler) Once(ctx context.Context) error {
	prefix := strings.TrimSuffix(r.Prefix, "/") + "/"
	// One revision for the whole scan: the records read below are those
	// of the same instant as the objects counted.
	head, err := r.Client.Get(ctx, prefix, clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("reading the store's revision: %w", err)
	}
	rev := head.Header.Revision
	actual := map[string]Usage{}
	tenantOf := map[cluster.ID]string{}
	recorded := map[string]record{}
	usagePrefix := r.Ledger.Prefix()
	key := prefix
	end := clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := r.Client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(scanPage))
		if err != nil {
			return fmt.Errorf("scanning the store at revision %d: %w", rev, err)
		}
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			if strings.HasPrefix(k, usagePrefix) {
				var rec record
				if json.Unmarshal(kv.Value, &rec) == nil {
					recorded[k] = rec
				}
				continue
			}
			id, workspaces, ok := parseObjectKey(strings.TrimPrefix(k, prefix))
			if !ok {
				continue
			}
			t, known := tenantOf[id]
			if !known {
				if tenant, _, _, err := r.Resolver.Limits(ctx, id); err == nil {
					t = tenant
				}
				tenantOf[id] = t
			}
			if t == "" {
				continue
			}
			d := Usage{Objects: 1, Bytes: int64(len(kv.Value))}
			if workspaces {
				d.Workspaces = 1
			}
			actual[r.Ledger.clusterKey(id)] = actual[r.Ledger.clusterKey(id)].Add(d)
			actual[r.Ledger.tenantKey(t)] = actual[r.Ledger.tenantKey(t)].Add(d)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	fixed := 0
	seen := map[string]Usage{}
	for k := range recorded {
		if _, ok := actual[k]; !ok {
			actual[k] = Usage{}
		}
	}
	for k, want := range actual {
		was := recorded[k]
		drift := want.Add(was.Usage.Neg())
		if drift.IsZero() {
			continue
		}
		seen[k] = drift
		diff := stable(r.seen[k], drift)
		if diff.IsZero() {
			continue
		}
		if err := r.correct(ctx, k, was.Reconciled, diff, rev); err != nil {
			klog.ErrorS(err, "Correcting a usage record", "key", k)
			continue
		}
		fixed++
	}
	r.seen = seen
	klog.V(2).InfoS("Reconciled stored usage", "revision", rev, "records", len(actual), "corrected", fixed)
	return nil
}

// correct adds diff to k, unless another reconciler corrected it since
// the snapshot (then its correction already covers this one).
func (r *Reconciler) correct(ctx context.Context, k string, base int64, diff Usage, rev int64) error {
	defer r.Ledger.forget(k)
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		resp, err := r.Client.Get(ctx, k)
		if err != nil {
			return err
		}
		var cur record
		var modRev int64
		if len(resp.Kvs) == 1 {
			modRev = resp.Kvs[0].ModRevision
			_ = json.Unmarshal(resp.Kvs[0].Value, &cur)
		}
		if cur.Reconciled != base {
			return nil
		}
		next := cur
		next.Usage, next.Writer, next.Reconciled = cur.Usage.Add(diff), r.Ledger.nextWriter(), rev
		// Never deleted, even at zero: Reconciled must survive, or a
		// second reconciler of the same snapshot would apply diff again.
		val, err := json.Marshal(next)
		if err != nil {
			return err
		}
		op := clientv3.OpPut(k, string(val))
		// A retry whose compare fails re-reads and re-checks Reconciled,
		// which an applied attempt has set: no resolver is needed.
		tr, err := r.Ledger.w.Txn(ctx, k, func(t clientv3.Txn) clientv3.Txn {
			return t.If(clientv3.Compare(clientv3.ModRevision(k), "=", modRev)).Then(op)
		}, nil)
		if err != nil {
			return err
		}
		if tr.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("record %s kept changing", k)
}

// parseObjectKey reads <group>/<resource>/<cluster>/... keys of per
// workspace objects; the hub's own records (wharf.dev) and hub-wide
// objects are not any workspace's.
func parseObjectKey(rest string) (cluster.ID, bool, bool) {
	segs := strings.SplitN(rest, "/", 4)
	if len(segs) < 4 || segs[0] == "wharf.dev" || !cluster.IsValidID(segs[2]) {
		return "", false, false
	}
	return cluster.ID(segs[2]), segs[0] == workspacesResource.Group && segs[1] == workspacesResource.Resource, true
}

// stable is, per component, the smaller of two drifts of the same sign,
// and zero where they differ in sign.
func stable(a, b Usage) Usage {
	pick := func(x, y int64) int64 {
		switch {
		case x > 0 && y > 0:
			return min(x, y)
		case x < 0 && y < 0:
			return max(x, y)
		}
		return 0
	}
	return Usage{Objects: pick(a.Objects, b.Objects), Bytes: pick(a.Bytes, b.Bytes), Workspaces: pick(a.Workspaces, b.Workspaces)}
}
