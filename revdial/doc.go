// Package revdial lets a server open connections to a client that sits behind
// NAT. The client (an edge agent) dials out once and holds a websocket
// control channel; whenever the server needs a connection it asks, over that
// channel, for the agent to open a fresh websocket "pickup" back, and hands
// that pickup to its caller as a net.Conn.
//
// The package is split by role:
//
//   - Server side: a [Server] owns every [Dialer] and every outstanding pickup
//     token; [Server.NewDialer] adopts an accepted control websocket,
//     [Dialer.Dial] returns a net.Conn, and the Server itself is the
//     http.Handler that pickups arrive at.
//   - Agent side: [NewListener] turns a control websocket into a net.Listener,
//     and [Client] keeps such a listener alive across reconnects, with
//     full-jitter exponential backoff.
//
// The package imports nothing from the hub, the apiserver or etcd, so it can
// be vendored into an agent binary on its own.
//
// # Wire format
//
// Control channel. The agent opens a websocket to the server (the URL is the
// embedding application's choice). Each control message is one JSON object
// followed by a newline, sent as a websocket text frame:
//
//	{"command":"keep-alive"}                                   server → agent
//	{"command":"pong"}                                         agent → server
//	{"command":"conn-ready","connPath":"/pickup/<token>"}      server → agent
//	{"command":"pickup-failed","connPath":"/pickup/<token>","err":"..."}  agent → server
//
// A frame may carry several newline-separated objects; blank lines are
// skipped, unknown commands are ignored (so either side can be upgraded
// first), and a frame larger than [MaxControlMessage] closes the channel.
// The server sends keep-alive every 18 s and the agent answers pong; both
// sides apply a 60 s read deadline, refreshed by every message received, so a
// tunnel that an intermediary dropped silently is detected within a minute.
//
// Pickups. connPath is a path (optionally with a query) that the agent
// resolves against the control URL and dials as a new websocket. Its last path
// segment is the pickup token. On success the websocket carries the logical
// connection's bytes as binary frames, in both directions, until either end
// sends a close frame or drops the TCP connection. If the server refuses the
// pickup (any non-101 answer) or the dial fails, the agent sends pickup-failed
// with the same connPath, and the server fails that one Dial immediately.
//
// Warm pickups. With [Options.WarmPickups] > 0 the server keeps that many
// pickups open ahead of demand. Their connPath carries the query "warm=1".
// The agent holds such a pickup back from Accept until the server sends one
// text frame (any payload, "go" by convention) on it: the activation. Dial
// sends the activation and returns immediately, so a warm Dial costs no
// round trip, and an idle warm pickup never reaches the agent's application.
// The server recycles warm pickups after [Options.WarmMaxAge], so a pickup
// that an intermediary dropped while idle is not handed to a caller for
// long; the pool is emptied when its tunnel dies.
//
// # Threat model
//
// The control channel is authenticated by whatever fronts it (the hub's
// proxy); this package trusts that an adopted control websocket belongs to the
// agent named by its id.
//
// The pickup handler, in contrast, is usually public: pickups arrive on a
// fresh connection, and the pickup token in the path is the only thing that
// authorizes it. So:
//
//   - tokens carry 192 bits from crypto/rand and are URL-safe base64, so they
//     cannot be guessed or enumerated;
//   - each token is single-use: the first websocket upgrade that presents it
//     removes it, whatever the outcome, and a replay gets 404 (a plain GET
//     gets 400 and spends nothing, so a stray request cannot cost an agent
//     its pickup);
//   - each token completes exactly the Dial that minted it, never another one
//     (the ancestor designs matched pickups to dials in arrival order, so a
//     late pickup could be handed to the wrong caller);
//   - a token dies with its Dial: when the Dial is cancelled, times out or its
//     tunnel dies, the token is withdrawn and a later pickup is refused; a
//     pickup that raced past that point is closed instead of delivered;
//   - pickup-failed from an agent can only fail a dial of that agent's own
//     tunnel;
//   - the agent ([Client]) only follows a connPath that is an absolute path
//     on the control channel's host, so a conn-ready cannot send the
//     agent's credentials anywhere else; with [ClientConfig.ControlHeader]
//     the credentials go on the control handshake only and pickups carry
//     none at all.
//
// Tokens are looked up in a map, not compared byte by byte, so response
// timing reveals nothing usable about a 192-bit secret. Tokens appear in
// request paths, and so may appear in access logs; because
// they are single-use and short-lived, a logged token is worthless once its
// pickup has arrived. Control messages are size-limited, an agent that
// floods pickup-failed can only fail its own dials, and an agent holds a
// bounded number of pickups in flight (it answers the excess with
// pickup-failed), so a misbehaving server cannot exhaust it either. Nothing
// here encrypts: run both websockets over TLS.
package revdial
