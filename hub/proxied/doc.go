// Package proxied takes a connection's client address from the PROXY
// protocol header (v1 or v2) that a trusted TCP proxy sends first.
//
// Every per-address bound of the hub (connections per address, TLS
// handshakes per prefix, connections without a request per prefix, the
// failed-authentication throttle, the hub's own address and its handshake
// turns) reads the TCP peer. Behind a TCP proxy or load balancer that
// does not keep client addresses, every client is the proxy: one client's
// flood spends everybody's budget, and a proxy on the hub's own host makes
// every client the hub's own address (tenth outside review, H18). A proxy
// that speaks the PROXY protocol (haproxy's send-proxy-v2, nginx stream's
// proxy_protocol, most cloud load balancers) names the client first; this
// listener believes it from the peers of --proxy-protocol-cidrs only.
//
// # Threat model
//
// The attacker is any client, and may reach the hub directly as well as
// through the proxy. The rules:
//
//   - Only the listed peers are read for a header: from any other peer a
//     header is not parsed but passed on as the connection's first bytes
//     (the TLS handshake then fails), so no client names its own address.
//   - A listed peer must send one (the specification's receivers do not
//     guess): a connection from it without a header is closed, so a
//     client that can reach the hub from a proxy's address is not taken
//     for the proxy's other clients, or for the hub itself. The hub's own
//     loopback connections (its OwnDials) are the one exception, told
//     apart by their local address before anything is read.
//   - Headers are read off the accept loop, each bounded by a deadline
//     (--proxy-protocol-header-timeout) and their number in flight by
//     maxPending, so a silent connection from a listed peer never holds
//     up another connection's accept.
//   - A LOCAL header (the proxy's own health check) or one naming no
//     internet address keeps the proxy's address.
package proxied
