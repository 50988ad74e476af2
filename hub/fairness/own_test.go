package fairness

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
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

// serverRead has the hub read up to len(buf) of conn's bytes, once the
// client wrote payload, and returns its side and the read's result.
func serverRead(t *testing.T, l net.Listener, client net.Conn, payload []byte) (net.Conn, chan error) {
	t.Helper()
	s := <-accepted(l)
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := client.Write(payload); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(s, make([]byte, len(payload)))
		done <- err
	}()
	return s, done
}

// record is a TLS record of typ with a body of n bytes.
func record(typ byte, n int) []byte {
	return append([]byte{typ, 3, 3, byte(n >> 8), byte(n)}, make([]byte, n)...)
}

func pending(t *testing.T, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("served without a turn: %v", err)
	default:
	}
}

// waitTimers waits until n waiters set their timers on clk, so that a
// step of the clock reaches them.
func waitTimers(clk *clocktesting.FakeClock) {
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
}

// The hub's own address takes turns to compute its handshakes (the
// ninth outside review: a rate shared by every local client was a queue
// one of them kept 5 s long). A handshake holds a turn from a read that
// brought its records until the hub next reads or writes; others wait
// in order, up to ownHandshakeWait, then are closed unread. Outsiders
// draining the hub-wide bucket leave the own address alone; the hub's
// own loopback dials never wait; a client that is done shaking hands, or
// never spoke TLS, takes no turn. All on an injected clock.
func TestOwnHandshakes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	own := NewOwnDials()
	// Hub-wide burst 2; one own handshake computes at once.
	l := LimitConnections(inner, ConnLimits{HandshakesPerSecond: 2, OwnHandshakeCPUs: 1, Own: own}, clk)
	t.Cleanup(func() { _ = l.Close() })
	hello := record(recordHandshake, 300)

	// Outsiders use up the hub-wide bucket.
	for i, tc := range []struct {
		from string
		want error
	}{{"127.0.5.1", nil}, {"127.0.5.2", nil}, {"127.0.5.3", errHandshakeRefused}} {
		if err := <-firstRead(t, l, dialFrom(t, l, tc.from)); !errors.Is(err, tc.want) {
			t.Fatalf("outsider %d: %v, want %v", i, err, tc.want)
		}
	}
	// The own address still shakes hands: a takes the turn.
	a, aDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), hello)
	if err := <-aDone; err != nil {
		t.Fatalf("first own handshake: %v", err)
	}
	// b waits while a computes; the hub's own dial does not.
	b, bDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), hello)
	c, err := own.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, cDone := serverRead(t, l, c, hello); <-cDone != nil {
		t.Fatal("the hub's own dial waited or was refused")
	}
	pending(t, bDone)
	// A peer that does not speak TLS takes no turn.
	if _, pDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), []byte("GET / HTTP/1.1\r\n")); <-pDone != nil {
		t.Fatal("plain text waited or was refused")
	}
	// a answers: b gets the turn.
	if _, err := a.Write([]byte("server hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatalf("own handshake after the turn came back: %v", err)
	}
	// b reads again (waits on its client): the turn is free for d,
	// whose records keep coming in pieces, each read taking the turn.
	bClient := make(chan error, 1)
	go func() {
		_, err := b.Read(make([]byte, 1))
		bClient <- err
	}()
	_, dDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), hello[:3])
	if err := <-dDone; err != nil {
		t.Fatalf("own handshake while the other waits on its client: %v", err)
	}
	// e waits behind d, and past ownHandshakeWait is closed unread.
	_, eDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), hello)
	pending(t, eDone)
	waitTimers(clk)
	clk.Step(ownHandshakeWait)
	if err := <-eDone; !errors.Is(err, errHandshakeRefused) {
		t.Fatalf("own handshake past its wait: %v, want %v", err, errHandshakeRefused)
	}
	// A closed own dial is forgotten.
	key := c.LocalAddr().String()
	_ = c.Close()
	if own.has(key) {
		t.Fatal("a closed own dial is still known")
	}
	_ = bClient
}

// tlsRecords ends a handshake at the first application-data record after
// the hub answered, at once for a peer not speaking TLS, and after
// maxHandshakeReads reads past the answer in any case.
func TestTLSRecords(t *testing.T) {
	hs, app, ccs := record(recordHandshake, 40), record(recordApplicationData, 30), record(recordChangeCipherSpec, 1)
	body17 := append([]byte{recordHandshake, 3, 3, 0, 6}, bytes.Repeat([]byte{recordApplicationData}, 6)...)
	type read struct {
		b        []byte
		answered bool
		over     bool
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"a ClientHello", []read{{hs, false, false}}},
		{"application data before the answer does not end it", []read{{append(hs, app...), false, false}, {ccs, true, false}}},
		{"TLS 1.3: change cipher spec and Finished after the answer", []read{{hs, false, false}, {append(ccs, app...), true, true}}},
		{"a header in pieces", []read{{hs[:2], false, false}, {hs[2:], false, false}, {app[:1], true, true}}},
		{"a record body is skipped, not read as headers", []read{{body17, true, false}}},
		{"a body in pieces", []read{{hs[:20], false, false}, {hs[20:], false, false}, {app, true, true}}},
		{"not TLS", []read{{[]byte("GET / HTTP/1.1\r\n"), false, true}}},
		{"reads past the answer end it", func() []read {
			r := []read{{hs, false, false}}
			for range maxHandshakeReads {
				r = append(r, read{hs[:1], true, false})
			}
			return append(r, read{hs[:1], true, true})
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r tlsRecords
			for i, rd := range tc.reads {
				if got := r.feed(rd.b, rd.answered); got != rd.over {
					t.Fatalf("read %d: over %v, want %v", i, got, rd.over)
				}
			}
		})
	}
}

// waitingTurns is how many connections wait for an own handshake turn.
func waitingTurns(l net.Listener) int {
	ts := l.(*connLimit).ownHS.turns
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.waiting[ownTurns])
}

// A connection whose peer reset it while it waited for its turn is
// closed when the turn comes, without taking it: the next one gets it (the
// tenth outside review's flood of ClientHellos each followed by a reset).
func TestOwnHandshakeOfAGonePeer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitConnections(inner, ConnLimits{OwnHandshakeCPUs: 1}, clk)
	t.Cleanup(func() { _ = l.Close() })
	hello := record(recordHandshake, 300)
	a, aDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), hello)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	gClient := dialFrom(t, l, "127.0.0.1")
	g, gDone := serverRead(t, l, gClient, hello)
	for waitingTurns(l) != 1 {
		time.Sleep(time.Millisecond)
	}
	_, hDone := serverRead(t, l, dialFrom(t, l, "127.0.0.1"), hello)
	for waitingTurns(l) != 2 {
		time.Sleep(time.Millisecond)
	}
	// g resets its connection while it waits.
	_ = gClient.(*net.TCPConn).SetLinger(0)
	_ = gClient.Close()
	for !peerGone(g.(*limitedConn).Conn) { // the reset reaches the hub's socket
		time.Sleep(time.Millisecond)
	}
	if _, err := a.Write([]byte("server hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-gDone; !errors.Is(err, errHandshakeRefused) {
		t.Fatalf("a peer gone while it waited: %v, want %v", err, errHandshakeRefused)
	}
	if err := <-hDone; err != nil {
		t.Fatalf("the next one after a gone peer: %v", err)
	}
}
