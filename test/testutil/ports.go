package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// Ports a child server is told to listen on come from below Linux's
// ephemeral range (32768-60999): a port the kernel handed out as free
// (":0") is also the next candidate for an outgoing connection's local
// port, and on a machine opening thousands of connections a second (the
// attack rows) one took it before the child bound it, three times in a
// row ("bind: address already in use": the tenant filter's harness gave
// up).
const (
	portLow  = 20000
	portHigh = 32000
)

// freePort returns a TCP port that is free on every address now (the
// child may bind ":port") and outside the ephemeral range.
func freePort() (int, error) {
	var lastErr error
	for range 200 {
		port := portLow + rand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			lastErr = err
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d: %w", portLow, portHigh, lastErr)
}
