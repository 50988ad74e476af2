package fairness

import (
	"context"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// firstRead has the hub read conn's first bytes (its "ClientHello") and
// reports the result when the read returns.
func firstRead(t *testing.T, l net.Listener, client net.Conn) chan error {
	t.Helper()
	s := <-accepted(l)
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 5))
		done <- err
	}()
	return done
}

// The hub's own address has a handshake bucket of its own (the fourth
// outside review, attempt 4: a flood from 127.0.0.1 reconnected for
// free). Outsiders draining the hub-wide bucket leave it whole; past its
// burst a handshake waits for its token, up to ownHandshakeWait, and past
// that it is closed unread; the hub's own loopback dials never wait. All
// on an injected clock that only the test moves.
func TestOwnHandshakes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	own := NewOwnDials()
	// 2 a second: hub-wide burst 2, per prefix 1/s burst 2, own 2/s burst 2.
	l := LimitConnections(inner, ConnLimits{HandshakesPerSecond: 2, Own: own}, clk)
	t.Cleanup(func() { _ = l.Close() })

	// Outsiders use up the hub-wide bucket.
	for i, tc := range []struct {
		from string
		want error
	}{{"127.0.5.1", nil}, {"127.0.5.2", nil}, {"127.0.5.3", errHandshakeRefused}} {
		if err := <-firstRead(t, l, dialFrom(t, l, tc.from)); !errors.Is(err, tc.want) {
			t.Fatalf("outsider %d: %v, want %v", i, err, tc.want)
		}
	}
	// The own address still has its burst, served at once.
	for i := range 2 {
		if err := <-firstRead(t, l, dialFrom(t, l, "127.0.0.1")); err != nil {
			t.Fatalf("own %d within its burst: %v", i, err)
		}
	}
	// Past it, 2 a second for 5 s: ten more wait, the eleventh (whichever
	// asks last) is closed.
	var pending []chan error
	for range 11 {
		pending = append(pending, firstRead(t, l, dialFrom(t, l, "127.0.0.1")))
	}
	cases := make([]reflect.SelectCase, len(pending))
	for i, ch := range pending {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	i, v, _ := reflect.Select(cases) // the ten others wait for the clock
	if err, _ := v.Interface().(error); !errors.Is(err, errHandshakeRefused) {
		t.Fatalf("own past its burst and wait: %v, want %v", err, errHandshakeRefused)
	}
	waiting := append(pending[:i:i], pending[i+1:]...)
	// The hub's own loopback dial is served at once, the bucket spent.
	c, err := own.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := <-firstRead(t, l, c); err != nil {
		t.Fatalf("the hub's own dial: %v", err)
	}
	// Five seconds later every waiting one has its token.
	clk.Step(ownHandshakeWait)
	for i, done := range waiting {
		if err := <-done; err != nil {
			t.Fatalf("waiting %d after its token: %v", i, err)
		}
	}
	// A closed own dial is forgotten.
	key := c.LocalAddr().String()
	_ = c.Close()
	if own.has(key) {
		t.Fatal("a closed own dial is still known")
	}
}
