// Package h2guard bounds, per client connection, the work an HTTP/2
// client makes the hub do below its handlers: the header blocks Go's
// HTTP/2 server decodes and the control frames it answers. It wraps each
// HTTP/2 connection (after the TLS handshake, before the server reads the
// client preface) and watches the bytes the server reads.
//
// # Threat model
//
// The attacker is anybody who can open a TLS connection to the hub, with
// a token, an invalid one or none. Go's HTTP/2 server (x/net/http2, the
// apiserver's) decodes a whole header block, HEADERS and its CONTINUATION
// frames, validating and copying every decoded byte up to its header list
// bound (MaxHeaderBytes, 1 MiB), before it calls any handler, so every
// limit of the hub's handler chain comes too late. The sixth outside
// review broke the hub from a few connections, without a credential:
//
//   - #1 HPACK amplification: one 4,000-byte header entered in the
//     dynamic table, then ~40-byte requests referencing it 240 times,
//     ~1 MB decoded each; another tenant fell from 525 to 0.4 requests a
//     second and the edges provider (replicas: single) lost its lease.
//   - #2 header blocks of ~900 KB (HEADERS and CONTINUATION), again and
//     again: lease lost.
//   - #3 3,000 connections left in the middle of a ~900 KB block: the
//     server holds what it read of each (RSS 1 to 4.1 GB), lease lost.
//   - W2 SETTINGS, PING, WINDOW_UPDATE and PRIORITY floods: 599 to 106
//     requests a second, connections never closed.
//
// # The defence
//
//   - Each wrapped connection parses what the server reads: the client
//     preface, then each frame's 9-byte header and payload (frames split
//     across reads, the PADDED and PRIORITY fields of HEADERS). It copies
//     only a frame header's 9 bytes and the pieces of an HPACK
//     representation split across reads (a long field), which it gives
//     its decoder whole: fed in pieces, hpack's decoder copies the field
//     again for each (quadratic).
//   - It decodes each header block with an HPACK decoder of its own that
//     mirrors the server's dynamic table (Options.HeaderTableSize, the
//     size the server advertises), and charges the block's wire bytes and
//     decoded bytes (name, value and 32 per field, as HTTP/2 counts them)
//     past FreeDecodedBytes (4 KiB: an ordinary head, whose indexed
//     fields decode to ~2 KB from ~100 bytes sent), whichever is larger,
//     to the connection's token bucket (Options.Burst at once,
//     Options.PerSecond after that, on an injectable clock). The larger
//     of the two bounds both of the server's passes over a block (reading
//     the wire, validating and copying what it decodes) within a factor
//     of two, plus 4 KiB a request: an amplified request costs what it
//     decodes to, a literal one what it sends.
//   - Every frame but DATA also costs Options.FrameCost plus its payload
//     (control-frame floods). DATA is a request body, bounded by flow
//     control and the tenants' budgets behind authentication. A
//     WINDOW_UPDATE is free while the client sent fewer than one per
//     2 KiB the server wrote: it acknowledges the hub's own answers (Go's
//     client sends one per ~4 KiB read, on the stream and on the
//     connection), and a large list must not cost a connection its life.
//   - A connection whose bucket cannot pay is closed at once (its
//     underlying TCP connection, not a GOAWAY a client may ignore), and
//     the server's next read fails, so it never decodes the rest. The
//     attacker must dial again, and each TLS handshake is metered per
//     address by the listener beneath (hub/fairness). Except an ordinary
//     head: a block that has cost at most PaceableHeadBytes (16 KiB, one
//     default frame) with its frames waits, its read held, until the
//     bucket refilled enough. A client multiplexing many ordinary
//     requests on one connection (client-go shares one among a process's
//     clients; a proxy multiplexes its users) is slowed to the refill,
//     never cut off with every request in flight. An amplified or huge
//     head is past 16 KiB, and control frames are never paced: both
//     still close the connection.
//   - A header block still open (no END_HEADERS) is bounded in wire size
//     (Options.MaxBlockBytes) and in time (Options.BlockTimeout), and
//     the bytes held in open blocks hub-wide beyond the first
//     FreeBlockBytes of each (Options.MaxOpenBlockBytes): the
//     connection that would exceed it is read no further until another
//     block ends, and closed if its own times out meanwhile. Closed at
//     once, an attacker dials again at once (~165 times a second in the
//     #3 row, each a TLS handshake and a megabyte sent again), which
//     cost the hub more than the wait. The server allocates a
//     frame's whole payload when it reads its header and keeps a block's
//     decoded fields until its end; this bounds #3's memory. A block
//     that fits one default-sized frame is never counted hub-wide, so
//     stalled attackers cannot make ordinary requests fail.
//   - The hub's own in-process loopback connections (fairness.OwnDials)
//     are never wrapped.
//
// What it costs: the guard decodes every block a second time (an indexed
// field is not copied; a literal one is), and while a field is incomplete
// it holds the field's bytes as the server's decoder does, so its memory
// is bounded by the same caps. Each HPACK representation costs at least
// 32 bytes (a field's overhead): a dynamic table size update decodes to
// nothing, and Go's decoder takes any number of them while its table is
// empty, at three times a literal's cost per byte. The guard cannot see decoded bytes the
// server discards past its own header list bound; it charges them anyway,
// which only closes a connection sooner that the server would answer 431.
package h2guard
