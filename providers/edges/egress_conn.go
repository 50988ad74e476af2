package edges

import (
	"net"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// countingConn reports the bytes that cross one tunnel connection. It sits
// under the HTTP transport and the ssh pipe alike, so upgraded streams
// (exec, port-forward) are counted too.
type countingConn struct {
	net.Conn
	typ v1alpha1.EdgeType
	m   EgressMetrics
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.m.TunnelBytes(c.typ, "from_edge", n)
	}
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.m.TunnelBytes(c.typ, "to_edge", n)
	}
	return n, err
}
