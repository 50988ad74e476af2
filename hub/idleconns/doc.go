// Package idleconns closes client connections that never begin a
// request: one that has not begun its first request within a timeout of
// its acceptance, and, past a hub-wide bound on such connections, the
// oldest of them from the address prefix holding the most.
//
// # Threat model
//
// The attacker is anybody who can open a TCP connection to the hub, with
// no credential at all, from any address, the hub's own included (a
// process on its host). A connection that completes its TLS handshake and
// sends the HTTP/2 preface and SETTINGS, and nothing else, costs the hub a
// descriptor, a goroutine, TLS and HTTP/2 buffers, and reaches no handler,
// so no limit that counts requests sees it. The sixth outside review
// (#4) opened 14,000 of them from 127.0.0.1: the hub's memory grew by
// about 1 GB, another tenant fell from 436 to 0.6 requests a second while
// they were opened, and the edges provider (replicas: single) lost its
// lease six times. Before, only --max-connections (three quarters of the
// open-file limit, outside the hub's own address's connections) and Go's
// HTTP/2 idle timeout (90 s) ever closed them.
//
// # The defence
//
//   - The listener (Tracker.Listener) registers every connection by its
//     remote address, which is every one of its requests' RemoteAddr. The
//     outermost filter (Tracker.Filter) marks the connection begun at its
//     first request, HTTP/1.1 or HTTP/2 (Go's servers call the handler
//     once a request's header is read), before authentication and before
//     any other limit, so a request with a token, an invalid one or none
//     counts the same.
//   - A connection not begun within Options.Timeout of its acceptance
//     (its TLS handshake included: a connection that never even starts
//     one is as idle) is closed, on an injectable clock.
//   - At most Options.Max connections are not begun at once, hub-wide;
//     past it the oldest of them from the address prefix
//     (login.PrefixOf) holding the most is closed for the new one. Nothing
//     a client does before its first request can keep a place, and a
//     flood from one prefix turns over its own places, not others': the
//     tenth outside review's 8,000 connections a second from one address,
//     each sending a ClientHello and nothing more, turned the places over
//     faster than any handshake, and, with the oldest hub-wide closed,
//     closed every newcomer's connection from any address before its
//     first request. A newcomer from the flood's own prefix (the hub's own
//     address, for a flood from its host) still shares its fate: nothing
//     before a request tells them apart.
//   - A connection that has begun a request is never touched again:
//     watches, tunnels of edge agents, websockets and kept-alive
//     connections between requests are bounded elsewhere (Go's idle
//     timeout, --max-connections).
//   - The hub's in-process loopback client's own connections
//     (fairness.OwnDials) are never closed here: the exemption is checked
//     when a connection would be closed, by then surely recorded.
//
// Each closure counts in wharf_connections_closed_without_request_total,
// by reason (timeout, bound); wharf_connections_without_request is how
// many are open now.
package idleconns
