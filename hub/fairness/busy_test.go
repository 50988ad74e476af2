package fairness

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// running is a request of the test: started when its exec runs, ended
// when told.
type running struct {
	st      *state
	started chan struct{}
	end     chan struct{}
	done    chan struct{}
}

func runWithTurns(c *Controller, tenant string, heavy bool) *running {
	r := &running{st: &state{}, started: make(chan struct{}), end: make(chan struct{}), done: make(chan struct{})}
	exec := c.withTurns(context.Background(), r.st, tenant, heavy, func() {
		close(r.started)
		<-r.end
	})
	go func() {
		defer close(r.done)
		exec()
	}()
	return r
}

func (r *running) isStarted() bool {
	select {
	case <-r.started:
		return true
	default:
		return false
	}
}

// TestBusyRequestsTakeTurns: a tenant's first request runs without a
// turn, its next ones in busy turns, at most its per-tenant number of
// them; another tenant's first never waits, and its second takes the
// turn the first tenant may not.
func TestBusyRequestsTakeTurns(t *testing.T) {
	c := &Controller{cpu: NewTurnstile(1), busy: newTurnstile(2, 1), unturned: newUnturned(1)}
	m1 := runWithTurns(c, "mallory", false)
	<-m1.started
	if m1.st.cpu.ts != c.cpu || m1.st.cpu.held.Load() {
		t.Fatal("mallory's first request took a turn")
	}
	m2 := runWithTurns(c, "mallory", false)
	<-m2.started
	if m2.st.cpu.ts != c.busy || !m2.st.cpu.held.Load() {
		t.Fatal("mallory's second request runs without a busy turn")
	}
	m3 := runWithTurns(c, "mallory", false)
	queued(t, c.busy, "mallory", 1)
	if m3.isStarted() {
		t.Fatal("mallory's third request runs while she holds her most turns")
	}
	// Victor's first runs at once, his second takes the free busy turn.
	v1 := runWithTurns(c, "victor", false)
	<-v1.started
	v2 := runWithTurns(c, "victor", false)
	<-v2.started
	if !v2.st.cpu.held.Load() || v2.st.cpu.ts != c.busy {
		t.Fatal("victor's second request holds no busy turn")
	}
	// A heavy request past the unturned ones takes the heavy turns.
	v3 := runWithTurns(c, "victor", true)
	<-v3.started
	if v3.st.cpu.ts != c.cpu || !v3.st.cpu.held.Load() {
		t.Fatal("victor's heavy request holds no heavy turn")
	}
	close(v3.end)
	<-v3.done
	close(m2.end)
	<-m2.done
	<-m3.started
	// Mallory's first ended: her next one runs without a turn again.
	close(m1.end)
	<-m1.done
	m4 := runWithTurns(c, "mallory", false)
	<-m4.started
	if m4.st.cpu.held.Load() || m4.st.cpu.ts != c.cpu {
		t.Fatal("mallory's request after her first ended took a turn")
	}
	for _, r := range []*running{m3, m4, v1, v2} {
		close(r.end)
		<-r.done
	}
	if c.busy.free != 2 || c.cpu.free != 1 || len(c.unturned.m) != 0 {
		t.Fatalf("at the end: busy free %d, heavy free %d, unturned %v", c.busy.free, c.cpu.free, c.unturned.m)
	}
}

// TestAsideGivesTheTurnBack: a busy request waiting on a provider (its
// answer's head, each read of its body) holds no turn, and takes one again
// before it goes on.
func TestAsideGivesTheTurnBack(t *testing.T) {
	c := &Controller{busy: newTurnstile(1, 1), unturned: newUnturned(0)}
	body := &blockingBody{reading: make(chan struct{}), proceed: make(chan struct{})}
	var sawHead, sawBody bool
	rt := AsideTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		// The provider is answering: the turn is someone else's.
		sawHead = c.busy.free == 1
		return &http.Response{StatusCode: http.StatusOK, Body: body}, nil
	}))
	st := &state{}
	exec := c.withTurns(context.Background(), st, "mallory", false, func() {
		ctx := context.WithValue(context.Background(), stateKey{}, st)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider/x", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Error(err)
			return
		}
		if !st.cpu.held.Load() {
			t.Error("no turn after the answer's head")
		}
		go func() {
			<-body.reading
			sawBody = c.busy.free == 1
			close(body.proceed)
		}()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "answer" || !st.cpu.held.Load() {
			t.Errorf("read %q, holding a turn: %v", b, st.cpu.held.Load())
		}
	})
	exec()
	if !sawHead || !sawBody {
		t.Fatalf("turn free while the provider answered: head %v, body %v", sawHead, sawBody)
	}
	if c.busy.free != 1 {
		t.Fatalf("busy free %d at the end", c.busy.free)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// blockingBody answers one read after proceed, then EOF.
type blockingBody struct {
	reading, proceed chan struct{}
	r                *strings.Reader
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if b.r == nil {
		close(b.reading)
		<-b.proceed
		b.r = strings.NewReader("answer")
	}
	return b.r.Read(p)
}

func (b *blockingBody) Close() error { return nil }

// TestBusyTurnExpires: a busy request holding its turn past
// BusyTurnMaxHold (waiting on something no turn covers) gives it back to
// another tenant's waiter, and takes one again after its next wait on the
// network.
func TestBusyTurnExpires(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c := &Controller{busy: newTurnstile(1, 1).expiring(BusyTurnMaxHold, clk), unturned: newUnturned(0)}
	m := runWithTurns(c, "mallory", false)
	<-m.started
	v := runWithTurns(c, "victor", false)
	queued(t, c.busy, "victor", 1)
	clk.Step(BusyTurnMaxHold - time.Millisecond)
	if v.isStarted() {
		t.Fatal("victor ran before mallory's turn expired")
	}
	clk.Step(time.Millisecond)
	<-v.started
	if m.st.cpu.held.Load() {
		t.Fatal("mallory still holds her expired turn")
	}
	// Her next network wait ends with a turn taken again: victor's, once
	// he is done.
	resumed := make(chan struct{})
	go func() {
		m.st.cpu.pause()
		m.st.cpu.resume(0)
		close(resumed)
	}()
	queued(t, c.busy, "mallory", 1)
	close(v.end)
	<-v.done
	<-resumed
	if !m.st.cpu.held.Load() {
		t.Fatal("mallory took no turn after her wait")
	}
	close(m.end)
	<-m.done
	if c.busy.free != 1 {
		t.Fatalf("busy free %d at the end", c.busy.free)
	}
}

// A busy request that moves HeavyBytes (a 900 kB body) goes on in turns
// of the heavy turnstile, which do not expire: its decode, longer than
// BusyTurnMaxHold, no longer runs on no turn at all (the noisy bench's
// B-A). On an injected clock.
func TestBusyRequestTurnsHeavy(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c := &Controller{busy: newTurnstile(1, 1).expiring(BusyTurnMaxHold, clk), cpu: NewTurnstile(1), unturned: newUnturned(0)}
	m := runWithTurns(c, "mallory", false)
	<-m.started
	if m.st.cpu.ts != c.busy {
		t.Fatal("a busy request does not start in a busy turn")
	}
	// Her body read: the turn given back, then taken again past
	// HeavyBytes, now of the heavy turnstile.
	m.st.cpu.pause()
	m.st.cpu.resume(HeavyBytes)
	if m.st.cpu.ts != c.cpu || !m.st.cpu.held.Load() {
		t.Fatalf("past HeavyBytes: heavy turnstile %v, held %v", m.st.cpu.ts == c.cpu, m.st.cpu.held.Load())
	}
	if c.busy.free != 1 || c.cpu.free != 0 {
		t.Fatalf("busy free %d, heavy free %d; want 1, 0", c.busy.free, c.cpu.free)
	}
	// Its turn outlasts BusyTurnMaxHold: a heavy turn does not expire.
	clk.Step(10 * BusyTurnMaxHold)
	if !m.st.cpu.held.Load() {
		t.Fatal("the heavy turn expired")
	}
	close(m.end)
	<-m.done
	if c.busy.free != 1 || c.cpu.free != 1 {
		t.Fatalf("at the end: busy free %d, heavy free %d", c.busy.free, c.cpu.free)
	}
}
