//go:build !unix

package fairness

import "net"

// peerGone cannot look at the socket here: every peer counts as present.
func peerGone(net.Conn) bool { return false }
