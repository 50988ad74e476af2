package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/etcd"
)

const (
	// maxCASAttempts bounds how often a batch is recomputed after another
	// replica changed one of its records first.
	maxCASAttempts = 16
	// flushDelay is how long consumption admitted from a grant waits
	// before it is written, gathering the writes of that time into one
	// transaction.
	flushDelay = 200 * time.Millisecond
	// grantTTL: a replica's grant not renewed for this long is dropped by
	// whichever replica commits next (a crashed replica's grant frees
	// itself); the holder stops using its grant after half of it.
	grantTTL = 60 * time.Second
)

// defaultChunk is the headroom a replica takes beyond a reservation, so
// that a tenant's next writes are admitted without an etcd round trip.
var defaultChunk = Usage{Objects: 64, Bytes: 1 << 20}

// record is a usage record's etcd value. Writer makes each value unique,
// so that a retried transaction can tell its own earlier write.
type record struct {
	// Usage is what is stored, as far as the replicas have written it.
	Usage
	// Grants is headroom each replica holds beyond Usage; it counts as
	// used for every other replica.
	Grants map[string]grant `json:"grants,omitempty"`
	Writer string           `json:"writer,omitempty"`
	// Reconciled is the etcd revision of the store snapshot the
	// reconciler last corrected this record from.
	Reconciled int64 `json:"reconciled,omitempty"`
}

type grant struct {
	Usage
	Renewed int64 `json:"renewed"` // unix seconds
}

// others sums the live grants of replicas but me.
func (r record) others(me string, now time.Time) Usage {
	var s Usage
	for id, g := range r.Grants {
		if id != me && now.Sub(time.Unix(g.Renewed, 0)) < grantTTL {
			s = s.Add(g.Usage)
		}
	}
	return s
}

// local is this replica's part of one record: g is its grant, c what it
// admitted from the grant and f what was released, both not yet written.
type local struct {
	tenant  string
	g, c, f Usage
	granted time.Time
	// lim is the ceiling g was sized under (sizedFor).
	lim Limits
}

// Ledger keeps the usage records in etcd (see the package doc).
type Ledger struct {
	w        *etcd.Writer
	clock    clock.WithDelayedExecution
	clusters string // <prefix>/wharf.dev/usage/clusters/
	tenants  string // <prefix>/wharf.dev/usage/tenants/
	writerID string
	seq      atomic.Uint64
	// chunk bounds the cluster records one transaction writes beside
	// the tenant's (txnClusters; tests lower it).
	chunk int

	mu     sync.Mutex
	queues map[string]*queue
	loc    map[string]*local
	// flushing holds tenants with a flush scheduled.
	flushing map[string]bool
	// known caches each record as last seen, so that a batch usually
	// costs one transaction; a stale entry only makes the compare fail,
	// and the Else branch brings it up to date.
	known map[string]cached
}

type cached struct {
	rec record
	rev int64
}

type queue struct {
	pending []*change
	busy    bool
}

// change is one write's reservation (delta > 0) or release.
type change struct {
	cluster cluster.ID
	tenant  string
	delta   Usage
	// enforce refuses a growing change past ws or ten.
	enforce bool
	ws, ten Limits
	// flush asks only for the tenant's in-memory changes to be written.
	flush bool
	err   error
	done  chan struct{}
}

// NewLedger returns a ledger under etcdPrefix, writing through w.
func NewLedger(w *etcd.Writer, etcdPrefix string) *Ledger {
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := strings.TrimSuffix(etcdPrefix, "/") + "/wharf.dev/usage/"
	clk, ok := w.Clock.(clock.WithDelayedExecution)
	if !ok {
		clk = clock.RealClock{}
	}
	return &Ledger{
		w: w, clock: clk, clusters: p + "clusters/", tenants: p + "tenants/", writerID: hex.EncodeToString(b[:]),
		chunk:  txnClusters,
		queues: map[string]*queue{}, loc: map[string]*local{}, flushing: map[string]bool{}, known: map[string]cached{},
	}
}

// Prefix is where the records live.
func (l *Ledger) Prefix() string { return strings.TrimSuffix(l.clusters, "clusters/") }

func (l *Ledger) clusterKey(id cluster.ID) string { return l.clusters + string(id) }
func (l *Ledger) tenantKey(t string) string       { return l.tenants + t }

// localOf returns (making) the local part of key; l.mu is held.
func (l *Ledger) localOf(key, tenant string) *local {
	lo := l.loc[key]
	if lo == nil {
		lo = &local{tenant: tenant}
		l.loc[key] = lo
	}
	lo.tenant = tenant
	return lo
}

// apply records c and returns its outcome: nil, an *Exceeded, or a
// storage error. Releases, and growth that this replica's grants cover,
// are applied in memory and written shortly after (flush); the rest is
// committed together with whatever else the tenant has pending.
func (l *Ledger) apply(c *change) error {
	pos, neg := c.delta.split()
	l.mu.Lock()
	if !c.flush {
		ck, tk := l.clusterKey(c.cluster), l.tenantKey(c.tenant)
		cl, tl := l.localOf(ck, c.tenant), l.localOf(tk, c.tenant)
		if !neg.IsZero() {
			cl.f, tl.f = cl.f.Add(neg), tl.f.Add(neg)
		}
		now := l.clock.Now()
		fresh := now.Sub(tl.granted) < grantTTL/2 && now.Sub(cl.granted) < grantTTL/2
		if pos.IsZero() || (fresh && cl.sizedFor(c.ws) && tl.sizedFor(c.ten) && cl.g.covers(pos) && tl.g.covers(pos)) {
			cl.g, tl.g = cl.g.Sub(pos), tl.g.Sub(pos)
			cl.c, tl.c = cl.c.Add(pos), tl.c.Add(pos)
			l.scheduleFlush(c.tenant)
			l.mu.Unlock()
			return nil
		}
	}
	c.delta = pos
	c.done = make(chan struct{})
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

// scheduleFlush writes the tenant's in-memory changes after flushDelay;
// l.mu is held.
func (l *Ledger) scheduleFlush(tenant string) {
	if l.flushing[tenant] {
		return
	}
	l.flushing[tenant] = true
	l.clock.AfterFunc(flushDelay, func() {
		l.mu.Lock()
		delete(l.flushing, tenant)
		q := l.queues[tenant]
		if q == nil {
			q = &queue{}
			l.queues[tenant] = q
		}
		lead := !q.busy
		q.busy = true
		l.mu.Unlock()
		if lead {
			l.lead(tenant, q)
		}
	})
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
		delete(l.queues, tenant)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	go l.lead(tenant, q)
}

// Flush writes this replica's in-memory changes of every tenant now, for
// a drain or a test that reads the records.
func (l *Ledger) Flush() {
	l.mu.Lock()
	tenants := map[string]bool{}
	for _, lo := range l.loc {
		tenants[lo.tenant] = true
	}
	l.mu.Unlock()
	for t := range tenants {
		_ = l.apply(&change{tenant: t, cluster: "", delta: Usage{}, flush: true})
	}
}

// liveGrants drops the grants not renewed within grantTTL.
func liveGrants(in map[string]grant, me string, now time.Time) map[string]grant {
	out := make(map[string]grant, len(in))
	for id, g := range in {
		if id == me || now.Sub(time.Unix(g.Renewed, 0)) < grantTTL {
			out[id] = g
		}
	}
	return out
}

func fail(batch []*change, err error) {
	for _, c := range batch {
		c.err = fmt.Errorf("updating stored usage: %w", err)
	}
}

// fits refuses d when the record's usage and the other replicas' grants
// leave no room for it. This replica's own grant need not be counted: it
// was granted within the limit, so d fits in it only where d fits here.
func (l *Ledger) fits(name string, lim Limits, r record, d Usage, now time.Time) error {
	return refusal(name, lim, r.Usage.Add(r.others(l.writerID, now)), d)
}

// refusal is an *Exceeded when d does not fit used under lim.
func refusal(name string, lim Limits, used, d Usage) error {
	names, req, u, l := lim.exceeded(used, d)
	if len(names) == 0 {
		return nil
	}
	return &Exceeded{Quota: name, Requested: req, Used: u, Limited: l}
}
