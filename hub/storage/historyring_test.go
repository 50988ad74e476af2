package storage

import (
	"testing"
	"time"
)

// The ring follows upstream's capacity policy, so its total is the bytes
// that upstream's history would still hold.
func TestHistoryRing(t *testing.T) {
	t0 := time.Unix(1000, 0)
	fresh := 75 * time.Second
	for _, tc := range []struct {
		name         string
		events       func(r *historyRing)
		wantCapacity int
		wantTotal    int64
	}{
		{name: "under the lower bound everything is held",
			events: func(r *historyRing) {
				for i := 0; i < 50; i++ {
					r.add(t0, 10)
				}
			}, wantCapacity: 100, wantTotal: 500},
		{name: "a fresh burst grows the capacity and is held whole",
			events: func(r *historyRing) {
				for i := 0; i < 320; i++ {
					r.add(t0.Add(time.Duration(i)*10*time.Millisecond), 1)
				}
			}, wantCapacity: 400, wantTotal: 320},
		{name: "slow events keep the lower bound and drop the oldest",
			events: func(r *historyRing) {
				for i := 0; i < 250; i++ {
					r.add(t0.Add(time.Duration(i)*time.Second), int64(i))
				}
			}, wantCapacity: 100, wantTotal: sum(150, 249)},
		{name: "stale history shrinks back when new events come",
			events: func(r *historyRing) {
				for i := 0; i < 400; i++ {
					r.add(t0, 1)
				}
				// Capacity 400 now; much later, small events push it down.
				later := t0.Add(10 * time.Minute)
				for i := 0; i < 400; i++ {
					r.add(later.Add(time.Duration(i)*time.Second), 0)
				}
			}, wantCapacity: 100, wantTotal: 0},
		{name: "reset empties it",
			events: func(r *historyRing) {
				for i := 0; i < 30; i++ {
					r.add(t0, 7)
				}
				r.reset()
				r.add(t0, 5)
			}, wantCapacity: 100, wantTotal: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHistoryRing(fresh)
			tc.events(r)
			if r.capacity != tc.wantCapacity || r.total != tc.wantTotal {
				t.Errorf("capacity %d, total %d; want %d, %d", r.capacity, r.total, tc.wantCapacity, tc.wantTotal)
			}
			var sum int64
			for i := r.start; i < r.end; i++ {
				sum += r.at(i).dead
			}
			if sum != r.total {
				t.Errorf("total %d, entries sum to %d", r.total, sum)
			}
		})
	}
}

func sum(from, to int64) int64 { return (from + to) * (to - from + 1) / 2 }
