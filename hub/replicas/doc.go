// Package replicas is what hub replicas know about each other: a registry
// of live replicas in etcd ([Registry]: name, internal URL and the CA of
// the replica's serving certificate, on an etcd lease that ends with the
// replica), the secret all replicas share ([LoadOrCreateSecret]), and the
// signed identity assertion one replica hands another when it forwards a
// request for a replicas: single provider ([Asserter]).
//
// # Threat model
//
// The forwarding hop (hub/proxy) runs between two hub replicas over TLS.
// The first replica has authenticated the caller and resolved the
// workspace; the holder must assert exactly that identity to the provider
// and nothing a client supplied.
//
//   - A client (any HTTP client of any replica) sends X-Kedge-* headers or
//     its own assertion header to the holder. The holder accepts an
//     identity only from an assertion whose HMAC-SHA256 over its payload,
//     keyed by the shared secret, verifies (constant-time compare), and it
//     strips every X-Kedge-* header and the assertion header itself before
//     asserting. A bad, expired or misdirected assertion is refused with
//     401; it never falls back to another identity.
//   - A captured assertion is replayed. Assertions live 30 s (so replica
//     clocks must agree to within that), are bound to
//     the target replica (audience), the provider, the method, the cleaned
//     path and the query, and carry a random nonce the holder remembers
//     until expiry, so each is accepted once.
//   - A client impersonates the holder to harvest assertions. A replica
//     only forwards to an internal URL found in the registry, verifying the
//     holder's certificate against the CA bundle the holder registered.
//   - The secret leaks through logs: it is never logged; it is 32 random
//     bytes created once, in etcd, by whichever replica starts first.
//
// etcd itself is the trust boundary: whoever can write it can register a
// replica or read the secret, as they could already read every Secret.
package replicas
