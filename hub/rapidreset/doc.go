// Package rapidreset bounds, per client connection, the HTTP/2 streams a
// client cancels before the hub begins its answer, and closes a
// connection past its bound.
//
// # Threat model
//
// The attacker is anybody who can open a TLS connection to the hub: a
// person with a token, one with an invalid token, or nobody at all. HTTP/2
// lets a client open a stream with HEADERS and cancel it at once with
// RST_STREAM (CVE-2023-44487, "rapid reset"). The cancel frees the stream's
// place under the connection's SETTINGS_MAX_CONCURRENT_STREAMS, so the
// client never waits for an answer: the fifth outside review sent 92,000
// streams a second on 8 connections. Go's HTTP/2 server bounds the handlers
// running at once per connection and skips those whose stream was reset
// before they started, but a handler that started runs whatever part of
// the chain it reaches before it notices the cancel (authentication, flow
// control, the anonymous and failed-authentication limits): with her token
// (#20), an invalid one (#21) or none (#22) another tenant fell from ~500
// to ~1 request a second and the hub missed its lease renewals, and the
// edges provider (replicas: single) stopped. Every limit behind
// authentication is too late: the attacker's requests never finish, so
// nothing charges them, and an anonymous or invalid one is no tenant's.
//
// # The defence
//
//   - The listener (Listener) knows each connection by its remote address,
//     which is every request's RemoteAddr; the outermost filter (Filter)
//     finds the request's connection there, before authentication and
//     before any other limit, so a stream with a token, an invalid one or
//     none costs the same.
//   - A stream already cancelled when its handler starts is not served at
//     all; one the client cancels before the hub wrote its answer's header
//     (or whose header was written only after the cancel, the answer of a
//     handler that noticed it) takes a token of its connection's bucket:
//     Options.Burst at once, Options.PerSecond after that, on an injectable
//     clock. A stream answered before the client cancelled it is an
//     ordinary request, bounded where requests are.
//   - A connection whose bucket is empty is closed at once (not a GOAWAY,
//     which a client may ignore while one stream keeps the connection
//     open): the attacker must dial again, and every new connection's TLS
//     handshake is metered per address by the listener beneath
//     (hub/fairness conns.go, own.go). Each closure counts in
//     wharf_connections_closed_for_resets_total.
//   - At most Options.Unanswered streams of a connection are in the chain
//     before their answer begins (a watch's answer begins once it is
//     established); more wait in Filter, where a reset ends the wait at
//     once and is counted, instead of in the chain, where it is noticed
//     only when the stream's turn comes.
//   - What a stream cancelled inside the chain still costs is cut where
//     it was measured: SkipCancelled stops it before the apiserver's
//     timeout filter (which would run it on in a goroutine of its own,
//     answer a 504 nobody reads and log "Post-timeout activity"), and the
//     tenants' flow control takes no lock for a cancelled request
//     (hub/fairness: some 700 of them had queued on the traffic budget's
//     lock, and every tenant behind them).
//   - Only HTTP/2 is metered: an HTTP/1.1 client cancels a request by
//     closing its connection, which is gone anyway, and a hijacked one (an
//     upgrade) must never be closed from here.
//   - The hub's in-process loopback client's own connections
//     (fairness.OwnDials) are never closed: its informers cancel watches
//     when they restart, and the hub's own work must not be cut.
//
// A legitimate client cancels few streams before their answer: a kubectl
// interrupted, a browser leaving a page, an informer giving up a request.
// The default bucket (20 at once, 2 a second) is above that and far
// below what an attack needs. Go's own bound, a connection with more than
// four times SETTINGS_MAX_CONCURRENT_STREAMS handlers queued gets a GOAWAY
// (ENHANCE_YOUR_CALM), still applies beneath; the hub keeps upstream's 100
// concurrent streams per connection.
package rapidreset
