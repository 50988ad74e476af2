package revdial

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// gate holds the agent's pickups back until the test releases them, and
// reports each connPath as its pickup starts.
type gate struct {
	started chan string
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan string, 16), release: make(chan struct{}, 16)}
}

func (g *gate) wrap(open PickupFunc) PickupFunc {
	return func(ctx context.Context, connPath string) (*websocket.Conn, error) {
		g.started <- connPath
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return open(ctx, connPath)
	}
}

// TestCancelledDial: a dial cancelled while its pickup is in flight returns
// at once, its late pickup is refused rather than delivered, and the next
// dial gets its own pickup.
func TestCancelledDial(t *testing.T) {
	noLeaks(t)
	rec := &tokenRecorder{}
	g := newGate()
	h := newHub(t, fastOptions())
	h.srv.mintHook = rec.hook
	ln, d := h.agent("a1", fastOptions(), func(open PickupFunc) PickupFunc { return g.wrap(rec.wrap(open)) })
	serve(t, ln, rec.announceThenEcho)

	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), dialIDKey{}, 1))
	errc := make(chan error, 1)
	go func() {
		c, err := d.Dial(ctx)
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	<-g.started // conn-ready reached the agent; its pickup is pending
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled dial returned %v, want context.Canceled", err)
	}

	g.release <- struct{}{} // the stale pickup now reaches the hub
	second := make(chan error, 1)
	go func() {
		c, err := d.Dial(context.WithValue(context.Background(), dialIDKey{}, 2))
		if err == nil {
			err = rec.checkDial(c, 2)
			c.Close()
		}
		second <- err
	}()
	<-g.started
	g.release <- struct{}{}
	if err := <-second; err != nil {
		t.Fatalf("dial after a cancelled one: %v", err)
	}
	// The stale pickup may reach the hub after the second dial finished.
	eventually(t, "the cancelled dial's pickup is refused", func() bool {
		return h.srv.Stats().PickupRefused == 1
	})
	if d.Err() != nil {
		t.Errorf("tunnel died: %v", d.Err())
	}
}

// TestPickupNeverArrives: the agent never picks up, so Dial fails after
// PickupWait with ErrPickupTimeout and the token is withdrawn.
func TestPickupNeverArrives(t *testing.T) {
	noLeaks(t)
	opts := fastOptions()
	opts.PickupWait = 200 * time.Millisecond
	g := newGate()
	h := newHub(t, opts)
	ln, d := h.agent("a1", opts, g.wrap)
	serve(t, ln, echo)
	_, err := d.Dial(context.Background())
	if !errors.Is(err, ErrPickupTimeout) {
		t.Fatalf("dial = %v, want ErrPickupTimeout", err)
	}
	h.srv.mu.Lock()
	n := len(h.srv.pending)
	h.srv.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d tokens still pending after the dial gave up", n)
	}
	if st := h.srv.Stats(); st.DialErrors != 1 {
		t.Fatalf("stats = %+v", st)
	}
	close(g.release)
}

// TestPickupFailedFailsDial: an agent that cannot open the pickup reports
// pickup-failed, which fails that dial without waiting for PickupWait (set
// far beyond the test's timeout to prove it).
func TestPickupFailedFailsDial(t *testing.T) {
	noLeaks(t)
	opts := fastOptions()
	opts.PickupWait = time.Hour
	h := newHub(t, opts)
	broken := func(PickupFunc) PickupFunc {
		return func(context.Context, string) (*websocket.Conn, error) {
			return nil, errors.New("no route to hub")
		}
	}
	ln, d := h.agent("a1", opts, broken)
	serve(t, ln, echo)
	_, err := d.Dial(context.Background())
	if !errors.Is(err, ErrPickupFailed) {
		t.Fatalf("dial = %v, want ErrPickupFailed", err)
	}
	if st := h.srv.Stats(); st.PickupFailures != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestCancelRacesPickup stages the other ordering: the pickup handler has
// already spent the token when the dial is cancelled. The dial must still
// return the cancellation, and the connection it would have received must
// be closed, so the agent's side sees EOF instead of a caller.
func TestCancelRacesPickup(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	taken := make(chan struct{})
	proceed := make(chan struct{})
	h.srv.afterTake = func() {
		close(taken)
		<-proceed
	}
	ln, d := h.agent("a1", fastOptions(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		c, err := d.Dial(ctx)
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	<-taken
	cancel()
	close(proceed)
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("dial = %v, want context.Canceled", err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("agent read = %d, %v; want io.EOF from the closed orphan", n, err)
	}
	if d.Err() != nil {
		t.Fatalf("tunnel died: %v", d.Err())
	}
}
