// Package tenantconns bounds the client connections each tenant holds
// open: a connection belongs to the tenant of its first request that the
// hub's flow control counts, and past a tenant's bound the connection of
// that tenant silent longest is closed.
//
// # Threat model
//
// The attacker is a person with a token, admin of her home, dialling from
// as many addresses as she likes (the seventh outside review used 60
// prefixes). Every other bound on connections is below authentication:
// --max-connections hub-wide, --max-connections-per-address, the idle
// timeout of connections that never begin a request (hub/idleconns), and
// Go's HTTP/2 idle timeout, which a client resets with a PING every few
// seconds. Each of her connections made one request and then only
// pinged: 12,000 to 16,000 of them held 14,098 of 20,000 descriptors, and
// with a flood of cheap requests beside them, the edges provider
// (replicas: single) lost its lease in 2 runs of 5. No limit that counts
// requests sees a connection that carries none.
//
// # The defence
//
//   - The listener (Tracker.Listener) registers every connection by its
//     remote address, which is every one of its requests' RemoteAddr.
//     The outermost filter (Tracker.Filter) counts each connection's
//     requests in flight and when its last one ended, and puts the
//     connection in the request's context.
//   - The flow control names the tenant of each counted request (hub
//     administrators and the hub's own are never counted) and calls
//     Attribute: a connection's first such request makes it its tenant's
//     for good. A connection shared by two tenants is the first's; one
//     client's connection carrying two people's requests is one client.
//   - Past Options.PerTenant connections of one tenant, the one of hers
//     with no request in flight that has been silent longest is closed;
//     when every one of hers has a request in flight, the newest is
//     closed as soon as its requests end. Her open connections are
//     therefore at most the bound plus what she may have in flight
//     (seats, watches, upgrades: each bounded per tenant elsewhere).
//     Only her own connections are ever closed for her.
//   - The hub's in-process loopback client's connections (exempt) are
//     never counted, nor connections of a tenant that unrelated callers
//     share (anonymous callers, confined identities whose workspace is
//     unknown): they would close each other's, and are bounded per
//     address below authentication.
//
// Closures count in wharf_tenant_connections_closed_total.
package tenantconns
