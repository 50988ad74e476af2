package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/etcd"
)

// maxCASAttempts bounds how often a batch is recomputed after another
// replica changed one of its records first.
const maxCASAttempts = 16

// record is a usage record's etcd value. Writer makes each value unique,
// so that a retried transaction can tell its own earlier write.
type record struct {
	Usage
	Writer string `json:"writer,omitempty"`
	// Reconciled is the etcd revision of the store snapshot the
	// reconciler last corrected this record from.
	Reconciled int64 `json:"reconciled,omitempty"`
}

// Ledger keeps the usage records in etcd (see the package doc).
type Ledger struct {
	w        *etcd.Writer
	clusters string // <prefix>/wharf.dev/usage/clusters/
	tenants  string // <prefix>/wharf.dev/usage/tenants/
	writerID string
	seq      atomic.Uint64

	mu     sync.Mutex
	queues map[string]*queue
	// known caches each record's value and mod revision as last seen, so
	// that a batch usually costs one transaction; a stale entry only makes
	// the compare fail, and the Else branch brings it up to date.
	known map[string]cached
}

type cached struct {
	u          Usage
	rev        int64
	reconciled int64
}

type queue struct {
	pending []*change
	busy    bool
}

// change is one write's reservation (delta > 0, enforced) or release.
type change struct {
	cluster cluster.ID
	tenant  string
	delta   Usage
	// enforce refuses a growing change past ws or ten.
	enforce bool
	ws, ten Limits
	err     error
	done    chan struct{}
}

// NewLedger returns a ledger under etcdPrefix, writing through w.
func NewLedger(w *etcd.Writer, etcdPrefix string) *Ledger {
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := strings.TrimSuffix(etcdPrefix, "/") + "/wharf.dev/usage/"
	return &Ledger{
		w: w, clusters: p + "clusters/", tenants: p + "tenants/", writerID: hex.EncodeToString(b[:]),
		queues: map[string]*queue{}, known: map[string]cached{},
	}
}

// Prefix is where the records live.
func (l *Ledger) Prefix() string { return strings.TrimSuffix(l.clusters, "clusters/") }

func (l *Ledger) clusterKey(id cluster.ID) string { return l.clusters + string(id) }
func (l *Ledger) tenantKey(t string) string       { return l.tenants + t }

// apply commits c, together with whatever else the tenant has pending,
// and returns c's outcome: nil, an *Exceeded, or a storage error.
func (l *Ledger) apply(c *change) error {
	c.done = make(chan struct{})
	l.mu.Lock()
	q := l.queues[c.tenant]
	if q == nil {
		q = &queue{}
		l.queues[c.tenant] = q
	}
	q.pending = append(q.pending, c)
	lead := !q.busy
	q.busy = true
	l.mu.Unlock()
	if lead {
		l.lead(c.tenant, q)
	}
	<-c.done
	return c.err
}

// lead commits the tenant's pending changes as one batch. Changes that
// arrive meanwhile form the next batch, led by a goroutine of its own so
// that this caller returns as soon as its own batch is done.
func (l *Ledger) lead(tenant string, q *queue) {
	l.mu.Lock()
	batch := q.pending
	q.pending = nil
	l.mu.Unlock()
	l.commit(context.Background(), tenant, batch)
	l.mu.Lock()
	if len(q.pending) == 0 {
		q.busy = false
		if len(q.pending) == 0 {
			delete(l.queues, tenant)
		}
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	go l.lead(tenant, q)
}

// commit applies batch with one compare-and-swap transaction over the
// tenant's record and its clusters' records, recomputing on conflict.
func (l *Ledger) commit(ctx context.Context, tenant string, batch []*change) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	keys := []string{l.tenantKey(tenant)}
	seen := map[string]bool{keys[0]: true}
	for _, c := range batch {
		if k := l.clusterKey(c.cluster); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		cur, err := l.current(ctx, keys)
		if err != nil {
			fail(batch, err)
			return
		}
		next := make(map[string]Usage, len(keys))
		for k, v := range cur {
			next[k] = v.u
		}
		changed := false
		for _, c := range batch {
			c.err = nil
			ck, tk := l.clusterKey(c.cluster), keys[0]
			if c.enforce && c.delta.Grows() {
				if e := refusal(WorkspaceQuotaName, c.ws, next[ck], c.delta); e != nil {
					c.err = e
					continue
				}
				if e := refusal(TenantQuotaName, c.ten, next[tk], c.delta); e != nil {
					c.err = e
					continue
				}
			}
			if !c.delta.IsZero() {
				changed = true
				next[ck] = next[ck].Add(c.delta)
				next[tk] = next[tk].Add(c.delta)
			}
		}
		if !changed {
			return
		}
		ok, err := l.swap(ctx, keys, cur, next)
		if err != nil {
			fail(batch, err)
			return
		}
		if ok {
			return
		}
	}
	fail(batch, fmt.Errorf("usage records of tenant %s kept changing", tenant))
}

func fail(batch []*change, err error) {
	for _, c := range batch {
		c.err = fmt.Errorf("updating stored usage: %w", err)
	}
}

// refusal is an *Exceeded when d does not fit used under lim.
func refusal(name string, lim Limits, used, d Usage) error {
	names, req, u, l := lim.exceeded(used, d)
	if len(names) == 0 {
		return nil
	}
	return &Exceeded{Quota: name, Requested: req, Used: u, Limited: l}
}

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
	ops := make([]clientv3.Op, len(missing))
	for i, k := range missing {
		ops[i] = clientv3.OpGet(k)
	}
	resp, err := l.w.Txn(ctx, missing[0], func(t clientv3.Txn) clientv3.Txn { return t.Then(ops...) }, nil)
	if err != nil {
		return nil, err
	}
	l.learn(missing, resp.Responses)
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
		l.known[k] = cached{u: rec.Usage, rev: r.Kvs[0].ModRevision, reconciled: rec.Reconciled}
	}
}

// swap writes next over keys if none changed since cur; on a failed
// compare it refreshes the cache from the Else branch.
func (l *Ledger) swap(ctx context.Context, keys []string, cur map[string]cached, next map[string]Usage) (bool, error) {
	cmps := make([]clientv3.Cmp, len(keys))
	puts := make([]clientv3.Op, len(keys))
	gets := make([]clientv3.Op, len(keys))
	var firstVal []byte
	for i, k := range keys {
		cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", cur[k].rev)
		val, err := json.Marshal(record{Usage: next[k], Writer: l.nextWriter(), Reconciled: cur[k].reconciled})
		if err != nil {
			return false, err
		}
		if i == 0 {
			firstVal = val
		}
		puts[i] = clientv3.OpPut(k, string(val))
		gets[i] = clientv3.OpGet(k)
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
		l.known[k] = cached{u: next[k], rev: resp.Header.Revision, reconciled: cur[k].reconciled}
	}
	l.mu.Unlock()
	return true, nil
}

// Get reads the stored usage of a cluster and its tenant.
func (l *Ledger) Get(ctx context.Context, id cluster.ID, tenant string) (ws, ten Usage, err error) {
	keys := []string{l.clusterKey(id), l.tenantKey(tenant)}
	l.mu.Lock()
	for _, k := range keys {
		delete(l.known, k)
	}
	l.mu.Unlock()
	cur, err := l.current(ctx, keys)
	if err != nil {
		return Usage{}, Usage{}, err
	}
	return cur[keys[0]].u, cur[keys[1]].u, nil
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
