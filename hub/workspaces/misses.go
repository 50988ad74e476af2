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

// MissTTL is how long a miss is answered from memory without a second
// look; MissStale how long it may still be answered so while one read in
// the background checks it again. They only matter while the index's
// watch lags behind a creation on another replica: a workspace this
// replica knows is found in memory first.
const (
	MissTTL   = time.Second
	MissStale = 30 * time.Second
)

// missEntries bounds the remembered misses; the oldest go first.
const missEntries = 10000

// missReadTimeout bounds a read made on behalf of several callers (or of
// none, in the background): no single caller's cancellation may end it.
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
// answer was the same 403: an existence oracle. Now only the first miss of
// a segment waits for etcd (concurrent ones share that read); later ones
// are answered from memory, and once the answer is older than MissTTL one
// read in the background checks it again: no request holds its seats
// while etcd is read, however long the flood lasts. (Measured: one read
// held a request, and with it its tenant's share, for 600 ms on a loaded
// machine.)
type misses struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	entries *lru.Cache // raw segment -> *missEntry
	flight  singleflight.Group
	// asked makes a caller's first naming of any segment cost one read
	// (asked.go).
	asked *asked
}

type missEntry struct {
	at         time.Time // of the read that found nothing
	refreshing bool
}

func newMisses(c clock.PassiveClock) *misses {
	return &misses{clock: c, entries: lru.New(missEntries), asked: newAsked(c)}
}

// remembered reports whether lookup would answer raw from memory.
func (m *misses) remembered(raw string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.entries.Get(raw)
	return ok && m.clock.Since(v.(*missEntry).at) < MissStale
}

// lookup reports whether raw is a remembered miss, and whether the caller
// should check it again in the background (refresh); it marks the entry
// as being checked, so that one caller does.
func (m *misses) lookup(raw string) (hit, refresh bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.entries.Get(raw)
	if !ok {
		return false, false
	}
	e := v.(*missEntry)
	switch age := m.clock.Since(e.at); {
	case age < MissTTL:
		return true, false
	case age < MissStale:
		if e.refreshing {
			return true, false
		}
		e.refreshing = true
		return true, true
	default:
		// Checks have failed for too long: the caller reads.
		m.entries.Remove(raw)
		return false, false
	}
}

// fresh reports whether raw missed within MissTTL.
func (m *misses) fresh(raw string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.entries.Get(raw)
	return ok && m.clock.Since(v.(*missEntry).at) < MissTTL
}

// settle files the outcome of a read of raw: a miss is remembered, a hit
// forgotten (the index learns the workspace through its watch), an error
// leaves the entry to be checked again.
func (m *misses) settle(raw string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotFound):
		m.entries.Add(raw, &missEntry{at: m.clock.Now()})
	case err == nil:
		m.entries.Remove(raw)
	default:
		if v, ok := m.entries.Get(raw); ok {
			v.(*missEntry).refreshing = false
		}
	}
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

// resolve runs read once for all concurrent callers of raw and files the
// outcome. A read that started before the index learned the workspace may
// still remember a miss: harmless, since memory is consulted first.
func (m *misses) resolve(ctx context.Context, raw string, read func(context.Context, string) (Info, error)) (Info, error) {
	v, err, _ := m.flight.Do(raw, func() (any, error) {
		if m.fresh(raw) {
			// A flight that ended a moment ago answered for this one.
			return Info{}, ErrNotFound
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), missReadTimeout)
		defer cancel()
		info, err := read(rctx, raw)
		m.settle(raw, err)
		return info, err
	})
	if err != nil {
		return Info{}, err
	}
	return v.(Info), nil
}

// refresh checks a remembered miss again, in the background.
func (m *misses) refresh(raw string, read func(context.Context, string) (Info, error)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), missReadTimeout)
		defer cancel()
		_, err := read(ctx, raw)
		m.settle(raw, err)
	}()
}
