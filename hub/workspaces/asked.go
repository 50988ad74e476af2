package workspaces

import (
	"context"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/wharfhub/wharf/hub/cluster"
)

// askedEntries bounds the remembered (caller, segment) pairs; the oldest
// go first, and a caller whose pair went asks "first" again: one more
// read, never a different answer.
const askedEntries = 50000

// indexReads counts the index's reads of etcd for one workspace record
// (its path or its id), whoever asked. Tests compare it across requests.
var indexReads = compbasemetrics.NewCounter(&compbasemetrics.CounterOpts{
	Name:           "wharf_workspace_index_reads_total",
	Help:           "Reads of one workspace record (path or logical cluster) from etcd by the workspace index.",
	StabilityLevel: compbasemetrics.ALPHA,
})

func init() {
	legacyregistry.MustRegister(indexReads)
}

// asked remembers which caller named which /clusters/ segment lately
// (outside attack review B-H).
//
// Why: a workspace the hub knows is resolved from memory; one it does not
// know is read from etcd the first time anybody names it (misses.go), and
// from memory after. So the first request naming a workspace a caller may
// not see was about 0.6 ms faster when it existed than when it did not,
// and one probe of a name never asked before told the two apart 83% of
// the time, whatever the answer (the same 403). Now every caller's first
// naming of a segment within MissStale costs one read of its record,
// whether it exists or not: for a missing one the negative cache's read
// when it makes one, for anything else one read of the same key that
// changes nothing. The reads are bounded by the requests that name
// segments (one per caller and segment per MissStale), and the hub's own
// work, which carries no caller, makes none.
type asked struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	entries *lru.Cache // caller + "\x00" + segment -> time.Time
}

func newAsked(c clock.PassiveClock) *asked {
	return &asked{clock: c, entries: lru.New(askedEntries)}
}

// first reports whether ctx's caller names raw for the first time within
// MissStale, and records that it did; false without a caller.
func (a *asked) first(ctx context.Context, raw string) bool {
	u, ok := request.UserFrom(ctx)
	if !ok || u == nil {
		return false
	}
	key := u.GetName() + "\x00" + raw
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.entries.Get(key); ok && now.Sub(v.(time.Time)) < MissStale {
		return false
	}
	a.entries.Add(key, now)
	return true
}

// Asked makes the first naming of raw by ctx's caller (within MissStale)
// cost one read of its record, as a first miss does, whether it exists or
// not (see asked). The hub calls it wherever a request's workspace is
// resolved, before memory answers; Resolve calls it too. A segment that
// neither memory nor the negative cache knows is left to Resolve, whose
// miss reads it: one read either way.
func (x *Index) Asked(ctx context.Context, raw string) {
	if !x.misses.asked.first(ctx, raw) {
		return
	}
	if _, ok := x.Cached(raw); !ok && !x.misses.remembered(raw) {
		return
	}
	// Shared by concurrent callers, as a first miss's read is.
	_, _, _ = x.misses.flight.Do("\x00"+raw, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), missReadTimeout)
		defer cancel()
		return nil, x.readFirst(rctx, raw)
	})
}

// readFirst makes the first read resolveStored would make for raw: one
// Get of its path's or its id's record.
func (x *Index) readFirst(ctx context.Context, raw string) error {
	if cluster.IsValidID(raw) {
		_, err := x.read(ctx, cluster.ID(raw))
		return err
	}
	path, err := cluster.ParsePath(raw)
	if err != nil {
		return ErrNotFound
	}
	_, err = x.lookupPath(ctx, path)
	return err
}
