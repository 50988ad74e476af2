package storecap

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Rewrites of stored objects (outside review 3, C-C) count as growth
// only by how much they enlarge the object; the replaced bytes make the
// monitor compact early instead of refusing everybody.
func TestAdmitRewritesAreReclaimable(t *testing.T) {
	for _, tc := range []struct {
		name           string
		inUse, size    int64
		writes         []write
		admitted       int
		kicked         bool
		growth, rewrit int64
	}{
		// Quota 1000, mark 800, file mark 900.
		{"rewrites past the mark in use are admitted and ask for a compaction", 500, 500,
			[]write{newWrite(100, 100), newWrite(100, 100), newWrite(100, 100)}, 3, true, 0, 300},
		{"growing rewrites count their growth", 500, 500,
			[]write{newWrite(120, 50), newWrite(120, 50), newWrite(120, 50), newWrite(120, 50)}, 3, true, 210, 150},
		{"creates past the mark are refused", 500, 500,
			[]write{newWrite(150, 0), newWrite(150, 0), newWrite(150, 0)}, 1, false, 150, 0},
		{"rewrites beyond the file's free pages count against the file", 500, 850,
			[]write{newWrite(300, 300), newWrite(300, 300), newWrite(300, 300)}, 1, true, 0, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Config{Quota: 1000, HighWater: 0.8, Interval: time.Second})
			m.state.Store(&State{Known: true, InUse: tc.inUse, Size: tc.size})
			n := 0
			for _, w := range tc.writes {
				if m.admitWrite(w, true) {
					n++
				}
			}
			if n != tc.admitted {
				t.Fatalf("admitted %d of %v, want %d", n, tc.writes, tc.admitted)
			}
			if kicked := len(m.kicks) == 1; kicked != tc.kicked {
				t.Fatalf("kicked %v, want %v", kicked, tc.kicked)
			}
			if g, r := m.pending.Load(), m.pendRewrites.Load(); g != tc.growth || r != tc.rewrit {
				t.Fatalf("counted growth %d rewrites %d, want %d %d", g, r, tc.growth, tc.rewrit)
			}
		})
	}
}

func TestNewWrite(t *testing.T) {
	for _, tc := range []struct{ size, old, growth, rewrite int64 }{
		{100, 0, 100, 0}, {100, 100, 0, 100}, {100, 40, 60, 40}, {40, 100, 0, 40},
	} {
		if w := newWrite(tc.size, tc.old); w.growth != tc.growth || w.rewrite != tc.rewrite {
			t.Errorf("newWrite(%d, %d) = %+v, want growth %d rewrite %d", tc.size, tc.old, w, tc.growth, tc.rewrite)
		}
	}
}

// Rewrites (admitted as such) of a large object, 6 per poll, on a real
// etcd: the monitor compacts them away at the next poll, never past the
// revision the watch caches have read, and no write is refused while the
// caches keep up.
func TestMonitorCompactsRewritesUpToTheCaches(t *testing.T) {
	ctx := context.Background()
	e, c := startEtcd(t)
	m, clk, events := newTestMonitor(e, c)
	var safe atomic.Int64
	m.cfg.SafeRevision = safe.Load
	val := strings.Repeat("z", 512<<10)
	// Half the mark of live data: the careful zone.
	for i := 0; i < testQuota/2/len(val); i++ {
		if _, err := c.Put(ctx, fmt.Sprintf("/live/%d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	// etcd reports the new size once its backend commits the batch: on
	// a loaded machine the first poll may still see less.
	for try := 0; ; try++ {
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if m.careful() {
			break
		}
		if try == 100 {
			t.Fatalf("not careful: %+v", m.State())
		}
		time.Sleep(etcdBatchInterval)
	}
	for poll := 0; poll < 8; poll++ {
		for i := 0; i < 6; i++ {
			if !m.admitWrite(newWrite(int64(len(val)), int64(len(val))), true) {
				if poll < 6 {
					t.Fatalf("poll %d: rewrite %d refused: %+v", poll, i, m.State())
				}
				continue
			}
			resp, err := c.Put(ctx, "/live/0", val+fmt.Sprint(poll, i))
			if err != nil {
				t.Fatal(err)
			}
			if poll < 6 {
				// The caches keep up for six polls, then stop.
				safe.Store(resp.Header.Revision)
			}
		}
		time.Sleep(etcdBatchInterval)
		clk.Step(time.Second)
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if m.lastCompactRev > safe.Load() {
			t.Fatalf("poll %d: compacted to %d past the caches' %d", poll, m.lastCompactRev, safe.Load())
		}
	}
	if m.lastCompactRev == 0 {
		t.Fatal("never compacted")
	}
	_ = events
}
