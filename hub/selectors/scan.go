package selectors

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// Scan records what a list read from storage: how many objects its
// selectors were evaluated against, how many items it answered, and how
// many its limit left for later pages. hub/fairness learns a list's cost
// from it when the answer alone does not tell: a list filtered by a
// selector or cut by its limit answers a few items, yet the first costs
// a look at every object in its scope, and the second tells how many
// there are (remainingItemCount). A Scan is safe for concurrent use.
type Scan struct {
	mu        sync.Mutex
	lists     int
	scanned   int64 // objects a selector was evaluated against
	selected  bool  // a selector was evaluated
	items     int64 // items answered
	remaining int64 // items past the limit, when storage said
	counted   bool  // remaining was said
	read      int64 // bytes of values read from etcd for it
}

type scanKey struct{}

// WithScan returns ctx carrying s, which RecordList fills.
func WithScan(ctx context.Context, s *Scan) context.Context {
	return context.WithValue(ctx, scanKey{}, s)
}

// AddRead adds n bytes of a value read from etcd to the Scan ctx
// carries; without one it does nothing. A list the watch cache hands to
// etcd (an exact or old resource version, a continue past the cache's
// window, a resource without a cache) reads and decodes every value of
// its scope, whatever it answers (eleventh outside review: 20 lists of
// 85 MiB of ConfigMaps at an old resourceVersion, answered as a 53 kB
// Table, took another tenant from 533 to 11 ops/s).
func AddRead(ctx context.Context, n int) {
	if s, ok := ctx.Value(scanKey{}).(*Scan); ok && s != nil {
		s.mu.Lock()
		s.read += int64(n)
		s.mu.Unlock()
	}
}

// Read is how many bytes of etcd values the request read.
func (s *Scan) Read() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read
}

// RecordList adds what a GetList with pred (as Wrap returned it) read
// into listObj to the Scan ctx carries; without one it does nothing.
func RecordList(ctx context.Context, pred storage.SelectionPredicate, listObj runtime.Object) {
	s, ok := ctx.Value(scanKey{}).(*Scan)
	if !ok || s == nil {
		return
	}
	scanned, selected := Matched(pred.Label)
	if !selected {
		scanned, selected = Matched(pred.Field)
	}
	items := int64(meta.LenList(listObj))
	var remaining int64
	counted := false
	if l, err := meta.ListAccessor(listObj); err == nil {
		if r := l.GetRemainingItemCount(); r != nil {
			remaining, counted = *r, true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	s.scanned += scanned
	s.selected = s.selected || selected
	s.items += items
	s.remaining += remaining
	s.counted = s.counted || counted
}

// Cost estimates what a list of the whole scope costs, in answer bytes,
// given that the list answered `answered` bytes; ok is false when the
// Scan says nothing (no list was recorded, or a cut list's storage did
// not count what it left, and nothing was read from etcd). Every object
// the list looked at but did not answer (a selector's misses, the items a
// limit left) weighs what an answered item did, and at least
// scanObjectBytes; the values read from etcd weigh their bytes.
func (s *Scan) Cost(answered int64) (cost int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cost = max(answered, s.read)
	if s.lists == 0 || (!s.selected && !s.counted) {
		return cost, s.read > 0
	}
	perItem := int64(scanObjectBytes)
	if s.items > 0 {
		perItem = max(perItem, answered/s.items)
	}
	unanswered := s.remaining
	if s.selected {
		// A selector was evaluated against every object up to the
		// limit, the answered ones among them.
		unanswered += max(s.scanned-s.items, 0)
	}
	return max(cost, answered+perItem*unanswered), true
}

// scanObjectBytes is the least an object a list looked at but did not
// answer weighs. It errs high: evaluating a selector against a cached
// object costs less than encoding a KiB, and a list over 50,000 objects
// that answers one of them or none must weigh what looking at them all
// costs (seventh outside review, #2), not its one-item answer.
const scanObjectBytes = 1 << 10
