package edges

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestRelayCuts checks the network-cut helper alone: bytes pass, then a
// black hole passes nothing either way on old and new connections, then
// Restore closes the old ones and new ones pass again.
func TestRelayCuts(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served <- c
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	r := startRelay(t, ln.Addr().String())
	roundTrip := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 4)
		_, err := io.ReadFull(c, buf)
		return err
	}
	old, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := roundTrip(old); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	r.Blackhole()
	if err := roundTrip(old); err == nil {
		t.Fatal("bytes passed a black-holed connection")
	}
	// The far side closing is not heard either: a read times out.
	(<-served).Close()
	_ = old.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := old.Read(make([]byte, 1)); err == nil || !isTimeout(err) {
		t.Fatalf("a close crossed the black hole: %v", err)
	}
	fresh, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(fresh); err == nil {
		t.Fatal("bytes passed a connection opened during the cut")
	}
	r.Restore()
	_ = old.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := old.Read(make([]byte, 1)); err == nil {
		t.Fatal("old connection still open after Restore")
	}
	again, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := roundTrip(again); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
