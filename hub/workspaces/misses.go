package workspaces

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// MissTTL is how long the index remembers that etcd named no workspace
// for a /clusters/<raw> segment. It only matters while the index's watch
// lags behind a creation on another replica: a workspace this replica
// knows is found in memory first.
const MissTTL = time.Second

// missEntries bounds the remembered misses; the oldest go first.
const missEntries = 10000

// missReadTimeout bounds the one etcd read shared by concurrent misses:
// it runs on behalf of several callers, so no single caller's
// cancellation may end it.
const missReadTimeout = 5 * time.Second

// misses is the index's negative cache (outside attack review, row 3).
//
// Why: the authorizer completes workspace resolution for every request
// (hub/server workspaceRBAC.withCluster), after the flow control has given
// the request its seats. A workspace that exists is found in memory; one
// that does not cost a quorum read of etcd, once per authorizer step. So
// requests to a missing workspace held their seats longer than requests to
// an existing one the caller may not see, and under a flood the share of
// 429s told the two apart (about 67% against 4%) although every single
// answer was the same 403: an existence oracle. With this cache, concurrent
// misses of one segment share one read, and a miss is answered from memory
// for MissTTL, so both cost the same seat time.
type misses struct {
	clock   clock.PassiveClock
	entries *lru.Cache // raw segment -> time.Time of the read
	flight  singleflight.Group
	mu      sync.Mutex // orders clearing against adding
}

func newMisses(c clock.PassiveClock) *misses {
	return &misses{clock: c, entries: lru.New(missEntries)}
}

// recent reports whether raw missed within MissTTL.
func (m *misses) recent(raw string) bool {
	v, ok := m.entries.Get(raw)
	if !ok {
		return false
	}
	if m.clock.Since(v.(time.Time)) >= MissTTL {
		m.entries.Remove(raw)
		return false
	}
	return true
}

// forget drops what is remembered for the segments of a workspace the
// index has just learned.
func (m *misses) forget(raws ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range raws {
		m.entries.Remove(r)
	}
}

// resolve runs read once for all concurrent callers of raw and remembers
// a miss. A read that started before the index learned the workspace may
// still remember a miss: harmless, since memory is consulted first.
func (m *misses) resolve(ctx context.Context, raw string, read func(context.Context, string) (Info, error)) (Info, error) {
	v, err, _ := m.flight.Do(raw, func() (any, error) {
		if m.recent(raw) {
			// A flight that ended a moment ago answered for this one.
			return Info{}, ErrNotFound
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), missReadTimeout)
		defer cancel()
		info, err := read(rctx, raw)
		if errors.Is(err, ErrNotFound) {
			m.mu.Lock()
			m.entries.Add(raw, m.clock.Now())
			m.mu.Unlock()
		}
		return info, err
	})
	if err != nil {
		return Info{}, err
	}
	return v.(Info), nil
}
