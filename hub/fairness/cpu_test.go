package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// queued waits until tenant has n waiters at t.
func queued(t *testing.T, ts *Turnstile, tenant string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ts.mu.Lock()
		got := len(ts.waiting[tenant])
		ts.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant %s: %d waiters, want %d", tenant, got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTurnstileTurnsAreDealtRoundRobin(t *testing.T) {
	ts := NewTurnstile(1)
	ctx := context.Background()
	if !ts.acquire(ctx, "x") {
		t.Fatal("the free turn was not taken")
	}
	got := make(chan string, 8)
	var wg sync.WaitGroup
	enqueue := func(tenant, name string, n int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ts.acquire(ctx, tenant) {
				got <- name
			}
		}()
		queued(t, ts, tenant, n)
	}
	// Mallory queues three before victor's one.
	enqueue("mallory", "m1", 1)
	enqueue("mallory", "m2", 2)
	enqueue("mallory", "m3", 3)
	enqueue("victor", "v1", 1)
	var order []string
	ts.release("x")
	for range 4 {
		name := <-got
		order = append(order, name)
		ts.release(map[byte]string{'m': "mallory", 'v': "victor"}[name[0]])
	}
	wg.Wait()
	if want := "m1 v1 m2 m3"; strings.Join(order, " ") != want {
		t.Fatalf("turns went %v, want %s", order, want)
	}
	if ts.free != 1 || len(ts.ring) != 0 || len(ts.waiting) != 0 {
		t.Fatalf("after all: free %d, ring %v, waiting %v", ts.free, ts.ring, ts.waiting)
	}
}

// TestTurnstilePerTenant: a tenant holding its most waits while turns are
// free, another takes them, and its waiter gets the next turn it gives
// back.
func TestTurnstilePerTenant(t *testing.T) {
	ts := newTurnstile(3, 1)
	ctx := context.Background()
	if !ts.acquire(ctx, "mallory") {
		t.Fatal("mallory's first turn was not free")
	}
	got := make(chan string, 4)
	go func() {
		if ts.acquire(ctx, "mallory") {
			got <- "m2"
		}
	}()
	queued(t, ts, "mallory", 1)
	if ts.free != 2 {
		t.Fatalf("free %d while mallory waits for her second, want 2", ts.free)
	}
	// Victor is not held behind her waiter.
	if !ts.acquire(ctx, "victor") {
		t.Fatal("victor got no turn")
	}
	ts.release("victor")
	select {
	case name := <-got:
		t.Fatalf("%s got a turn while mallory held her most", name)
	default:
	}
	ts.release("mallory")
	if name := <-got; name != "m2" {
		t.Fatalf("got %s", name)
	}
	ts.release("mallory")
	if ts.free != 3 || len(ts.held) != 0 || len(ts.ring) != 0 {
		t.Fatalf("after all: free %d, held %v, ring %v", ts.free, ts.held, ts.ring)
	}
}

func TestTurnstileBound(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		ts := NewTurnstile(n)
		for i := range n {
			if !ts.acquire(context.Background(), "t") {
				t.Fatalf("n=%d: turn %d not free", n, i)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan bool)
		go func() { done <- ts.acquire(ctx, "u") }()
		queued(t, ts, "u", 1)
		cancel()
		if <-done {
			t.Fatalf("n=%d: a turn beyond the bound was given", n)
		}
		if len(ts.ring) != 0 || len(ts.waiting) != 0 {
			t.Fatalf("n=%d: a cancelled waiter stayed queued: %v %v", n, ts.ring, ts.waiting)
		}
		for range n {
			ts.release("t")
		}
		if ts.free != n {
			t.Fatalf("n=%d: free %d after releasing all", n, ts.free)
		}
	}
	if NewTurnstile(0) != nil || NewTurnstile(0).newHold(context.Background(), "t", true) != nil {
		t.Fatal("0 turns must mean no bound")
	}
}

// TestHoldGivesItsTurnBackOnTheNetwork: a heavy request blocked in a
// response write (a slow reader) holds no turn; a request becomes heavy
// past HeavyBytes; after its dispatch returns it takes no more turns.
func TestHoldGivesItsTurnBackOnTheNetwork(t *testing.T) {
	tests := []struct {
		name      string
		heavy     bool
		writes    []int
		wantHeavy bool
	}{
		{"heavy by estimate", true, []int{10}, true},
		{"small", false, []int{10, 10}, false},
		{"heavy once past HeavyBytes", false, []int{HeavyBytes / 2, HeavyBytes / 2, 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := NewTurnstile(1)
			st := &state{}
			h := ts.newHold(context.Background(), "mallory", tt.heavy)
			st.cpu = h
			w := &refusalWriter{ResponseWriter: httptest.NewRecorder(), st: st}
			h.begin()
			if h.held.Load() != tt.heavy {
				t.Fatalf("held %v after begin", h.held.Load())
			}
			for _, n := range tt.writes {
				if _, err := w.Write(make([]byte, n)); err != nil {
					t.Fatal(err)
				}
			}
			if h.held.Load() != tt.wantHeavy || h.heavy.Load() != tt.wantHeavy {
				t.Fatalf("after writes: held %v heavy %v, want %v", h.held.Load(), h.heavy.Load(), tt.wantHeavy)
			}
			h.end()
			if _, err := w.Write(make([]byte, HeavyBytes)); err != nil {
				t.Fatal(err)
			}
			if h.held.Load() || ts.free != 1 {
				t.Fatalf("a write after the end took a turn: held %v free %d", h.held.Load(), ts.free)
			}
		})
	}
}

// blockingWriter blocks each Write until released.
type blockingWriter struct {
	http.ResponseWriter
	entered chan struct{}
	release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.entered <- struct{}{}
	<-b.release
	return len(p), nil
}

func TestSlowReaderHoldsNoTurn(t *testing.T) {
	ts := NewTurnstile(1)
	bw := &blockingWriter{ResponseWriter: httptest.NewRecorder(), entered: make(chan struct{}), release: make(chan struct{})}
	st := &state{}
	st.cpu = ts.newHold(context.Background(), "mallory", true)
	w := &refusalWriter{ResponseWriter: bw, st: st}
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.cpu.begin()
		defer st.cpu.end()
		_, _ = w.Write([]byte("x"))
	}()
	<-bw.entered
	// Mallory's request is stuck writing: victor's heavy request runs.
	if !ts.acquire(context.Background(), "victor") {
		t.Fatal("victor got no turn while mallory's request waited on the network")
	}
	close(bw.release)
	// Mallory's write returned: it waits for victor's turn to end.
	queued(t, ts, "mallory", 1)
	ts.release("victor")
	<-done
	if ts.free != 1 {
		t.Fatalf("free %d at the end", ts.free)
	}
}

func TestRelayedTakesNoMoreTurns(t *testing.T) {
	ts := NewTurnstile(1)
	st := &state{}
	st.cpu = ts.newHold(context.Background(), "mallory", true)
	st.cpu.begin()
	ctx := context.WithValue(context.Background(), stateKey{}, st)
	Relayed(ctx)
	if ts.free != 1 {
		t.Fatal("a relayed request kept its turn")
	}
	w := &refusalWriter{ResponseWriter: httptest.NewRecorder(), st: st}
	if _, err := w.Write(make([]byte, 2*HeavyBytes)); err != nil {
		t.Fatal(err)
	}
	if ts.free != 1 {
		t.Fatal("a relayed request took a turn to write")
	}
	Relayed(context.Background()) // no state: nothing to do
}

// BenchmarkHoldSmallRequest is what a request that is not heavy pays
// around each write and body read: no lock.
func BenchmarkHoldSmallRequest(b *testing.B) {
	h := NewTurnstile(1).newHold(context.Background(), "bob", false)
	h.begin()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.pause()
			h.resume(1 << 10)
		}
	})
}
