package storage

import (
	"time"

	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
)

// historyRing mirrors the capacity policy of upstream's watch cache event
// history (watchCacheHistory in k8s.io/apiserver/pkg/storage/cacher,
// watch_cache_history.go) so that the hub can estimate how many bytes of
// no-longer-current objects that history keeps reachable. Upstream keeps
// the last `capacity` events, at least 100; it doubles the capacity while
// every kept event is younger than the freshness window, halves it when a
// newer quarter is older than that, and drops the oldest event only when
// a new one arrives. So after a burst of large deletes and then quiet,
// the deleted objects stay reachable until as many new events arrive:
// with 1 MB ConfigMaps, hundreds of MB held for as long as the resource is
// quiet (issue 24).
//
// Each entry holds the bytes its event keeps alive beyond the current
// state: a DELETED event keeps the deleted object (its PrevObject, the
// object the cache held); a MODIFIED event keeps the version it replaced,
// estimated by the new one's size. ADDED events keep only current objects.
type historyRing struct {
	fresh    time.Duration
	lower    int
	upper    int
	capacity int
	// entries is a cyclic buffer holding [start, end), as upstream's.
	entries    []historyEntry
	start, end int
	total      int64
	// byOwner sums dead by the tenant the entries are attributed to
	// (historyshare.go); entries of no known tenant are not in it.
	byOwner map[string]int64
}

type historyEntry struct {
	at    time.Time
	dead  int64
	owner string
}

// Upstream's bounds (watch_cache_history.go: defaultLowerBoundCapacity,
// defaultUpperBoundCapacity; capacityUpperBound for longer windows).
const (
	historyLowerBound = 100
	historyUpperBound = 100 * 1024
)

func newHistoryRing(fresh time.Duration) *historyRing {
	if fresh < cacherstorage.DefaultEventFreshDuration {
		fresh = cacherstorage.DefaultEventFreshDuration
	}
	upper := historyUpperBound
	for window := cacherstorage.DefaultEventFreshDuration; window < fresh && upper < 1<<30; window *= 2 {
		upper *= 2
	}
	return &historyRing{fresh: fresh, lower: historyLowerBound, upper: upper, capacity: historyLowerBound,
		entries: make([]historyEntry, historyLowerBound)}
}

func (r *historyRing) full() bool { return r.end == r.start+r.capacity }

func (r *historyRing) at(i int) historyEntry { return r.entries[i%r.capacity] }

// add records one event seen at now that keeps dead bytes reachable.
func (r *historyRing) add(now time.Time, dead int64) { r.addFor(now, dead, "") }

// drop forgets the oldest entry.
func (r *historyRing) drop() {
	e := r.at(r.start)
	r.total -= e.dead
	if e.owner != "" && e.dead != 0 {
		if r.byOwner[e.owner] -= e.dead; r.byOwner[e.owner] <= 0 {
			delete(r.byOwner, e.owner)
		}
	}
	r.start++
}

// addFor is add, attributing the dead bytes to owner ("" for none).
func (r *historyRing) addFor(now time.Time, dead int64, owner string) {
	switch {
	case r.full() && now.Sub(r.at(r.start).at) < r.fresh:
		r.resize(min(r.capacity*2, r.upper))
	case r.full() && now.Sub(r.at(r.end-r.capacity/4).at) > r.fresh:
		r.resize(max(r.capacity/2, r.lower))
	}
	if r.full() {
		r.drop()
	}
	r.entries[r.end%r.capacity] = historyEntry{at: now, dead: dead, owner: owner}
	r.end++
	r.total += dead
	if owner != "" && dead != 0 {
		if r.byOwner == nil {
			r.byOwner = map[string]int64{}
		}
		r.byOwner[owner] += dead
	}
}

func (r *historyRing) resize(capacity int) {
	if capacity == r.capacity {
		return
	}
	for r.end-r.start > capacity {
		r.drop()
	}
	entries := make([]historyEntry, capacity)
	for i := r.start; i < r.end; i++ {
		entries[i%capacity] = r.at(i)
	}
	r.entries, r.capacity = entries, capacity
}

// reset is upstream's ResetLocked: a relist empties the history.
func (r *historyRing) reset() {
	r.start = r.end
	r.total = 0
	r.byOwner = nil
}
