//go:build unix

package fairness

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerGone reports whether c's peer has already closed or reset the
// connection, without reading anything: a look at the socket, which never
// waits. A handshake flood that writes a ClientHello and resets its
// connection at once (the tenth outside review: 8,000 a second from the
// hub's own address) would otherwise cost a key exchange and a signature
// for each when its turn comes.
func peerGone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		gone = (n == 0 && err == nil) || errors.Is(err, unix.ECONNRESET)
		return true
	})
	return gone
}
