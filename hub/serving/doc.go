// Package serving serves the hub's public HTTPS listener itself, as
// k8s.io/apiserver's SecureServingInfo.Serve and RunServer would, with one
// difference: each HTTP/2 connection, once TLS has decrypted it, goes
// through a hook (Server.WrapHTTP2) before the HTTP/2 server reads it.
//
// # Threat model
//
// The attacker is anybody who can open a TLS connection to the hub, with
// or without a credential. The sixth outside review attacked below every
// HTTP handler, inside Go's HTTP/2 server: HPACK dynamic-table
// amplification (~40-byte requests that decode to ~1 MB of headers),
// 900 KB HEADERS+CONTINUATION blocks, thousands of connections stalled in
// the middle of a header block (~1 MB of memory each), and floods of
// SETTINGS and PING frames. No handler, filter or authenticator runs
// before the harm is done, and each attack made the hub lose its
// providers' leases. A defence must see the decrypted frames as the
// HTTP/2 server reads them, and close the connection; upstream's Serve
// builds its http.Server, calls http2.ConfigureServer and tls.NewListener
// internally and exposes nothing between the TLS connection and
// (*http2.Server).ServeConn. This package is that place; the defence
// itself is the hook's (hub/h2guard).
//
// What must not change is everything else a client can tell: the TLS
// configuration (serving and SNI certificates and the client CA, reloaded
// from their files by dynamiccertificates; minimum version, cipher suites,
// curves; ALPN h2 then http/1.1; a client certificate requested, never
// required), the http.Server's limits (1 MiB of request header, 90 s idle,
// 32 s to read a header), the HTTP/2 server's (256 KiB frames and stream
// windows, HTTP2MaxStreamsPerConnection or 100 streams, a connection
// window for all of them, 90 s idle), TCP keep-alive, failed handshakes
// counted in apiserver_tls_handshake_errors_total and logged at V(5) only,
// and graceful shutdown (GOAWAY on HTTP/2, then up to the shutdown timeout
// for the requests in flight). The hook keeps the *tls.Conn's
// ConnectionState, so requests carry their TLS state and client
// certificates still authenticate. Upstream's cap on header values per
// request (MaxHeaderValueCount) applies only when built with Go 1.27;
// this Go's net/http has none, so neither do we.
//
// # Why a stand-in listener
//
// The generic server's RunWithContext owns the hub's lifecycle: post-start
// hooks once it listens, /readyz failing at SIGTERM, ShutdownDelayDuration,
// the pre-shutdown hooks (the providers' handover) while it still serves,
// the drain of requests and watches, then stopping the listener and
// waiting for its listenerStoppedCh and stoppedCh. Reimplementing it would
// fork upstream's most delicate code; it only calls Serve on its
// SecureServingInfo, which cannot be replaced. So the generic server keeps
// SecureServingInfo, TLS material included (the loopback client's SNI
// certificate too), with a Handoff as its listener: it never accepts; its
// first Accept starts the Server (when upstream would start serving, after
// its own start-up steps and before the post-start hooks need the port);
// its Close (the generic server stopping its own http.Server, at the very
// moment it would have stopped the real one) shuts the Server down with
// the same timeout, and its Accept returns only when the Server is done,
// so that upstream's two channels close when ours do. The real listener,
// already wrapped by the connection limits and the rapid-reset listener
// (hub/fairness, hub/rapidreset), is served by this package alone: every
// connection, the loopback client's included, is accepted through those
// wrappers as before (the hub's own dials stay exempt, hub/fairness
// own.go), and the hook sees the connection rapidreset counts. The price: the generic server also runs its own certificate
// controllers for a listener that never accepts (a few idle goroutines
// and file watches).
//
// Go 1.27's x/net serves HTTP/2 through net/http's own server; this
// package relies on x/net's legacy server (Go 1.26) and must be revisited
// then.
package serving
