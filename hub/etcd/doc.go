// Package etcd runs the embedded etcd member that backs a single hub when no
// external etcd cluster is configured, takes and restores snapshots, and
// provides RetryingKV (retry.go), through which the hub's stores write so
// that the loss of one member of an etcd cluster, or of its leader, costs
// clients no error: compare-and-swap writes cut off by it are retried,
// exactly once in effect, and an attempt that may have been applied is
// decided from the key or its history. Writer (txnretry.go) applies the
// same policy to the writes that go to etcd directly (the workspace
// index, login state and sessions, the replica registry, shared
// secrets): idempotent puts and deletes are re-sent, and a
// compare-and-swap Txn names a Resolver that tells from the key whether
// its own earlier attempt is why a retry's compare failed.
//
// Threat model. etcd holds everything: every workspace's objects, every
// Secret, the service-account signing key and the login sessions' refresh
// tokens. The embedded member has no authentication and no TLS, so the only
// thing between another local user (or a process of another user on the
// hub's machine) and all of that is who can connect. Hence:
//
//   - The member opens no TCP port: no client port, no peer port, no
//     metrics port. Loopback TCP is reachable by every local user.
//   - Clients connect through a unix socket inside the member's directory,
//     which is created (and re-restricted at every start) with mode 0700, so
//     only the hub's own user can reach the socket.
//   - A single member has no peers, so it needs no peer listener; the peer
//     URL it advertises is never listened on.
//   - One member per directory: the member's process holds member.lock in
//     it (dirlock.go), and a hub restarted before its predecessor has
//     stopped waits for it, since etcd removes its socket path when it
//     opens and when it closes, and would otherwise leave the new member
//     without a socket.
//
// Snapshots (snapshot*.go, `wharf-hub snapshot save|restore`) hold all of
// the above too. Save reaches the embedded member only through that
// socket, so only the hub's user can take one; the file is written 0600
// (etcd's client writes it so) in a fresh 0700 directory next to it and
// renamed over it when complete, so a file or symlink someone planted in a
// shared backup directory is replaced, never written into or through.
// Saving an external etcd uses the operator's TLS configuration as given
// (no verification is ever skipped, also not when diagnosing why a member
// failed), and its errors name endpoints and TLS causes, never key
// material. Restore checks the snapshot's integrity hash, writes only into
// a new or empty data dir (never over a live member, nor beside another
// hub's certificates and tokens), refuses any other before changing
// anything, and makes its directories 0700 as StartEmbedded does.
//
// An external etcd (--etcd-servers) is the operator's to secure, with TLS
// client certificates (--etcd-certfile, --etcd-keyfile, --etcd-cafile).
package etcd
