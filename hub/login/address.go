package login

import (
	"net"
	"strings"
)

// HostOf is the host of a "host:port" address (a request's RemoteAddr, a
// connection's remote address), or addr itself without brackets when it
// has no port. The hub's limits that key on a client address share it, so
// that a connection and its requests count against one key.
func HostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.Trim(addr, "[]")
}

// PrefixOf is the network an address belongs to for the hub's limits: its
// IPv4 /24 or its IPv6 /64, what one host or one subscriber usually holds.
// A budget per address alone is no bound on one who rotates addresses
// within such a block (third outside review, C-F: forged tokens from a
// fresh 127.x.y.z per request were never refused). An address that is not
// an IP is its own prefix.
func PrefixOf(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil {
		return addr
	}
	if v4 := ip.To4(); v4 != nil {
		return (&net.IPNet{IP: v4.Mask(net.CIDRMask(24, 32)), Mask: net.CIDRMask(24, 32)}).String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}
