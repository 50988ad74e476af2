// Package quota bounds what each workspace and each tenant may store in
// the hub: objects, bytes and child workspaces, with ceilings the hub sets
// (flags, and per-workspace overrides only hub administrators may write).
//
// # Accounting
//
// Usage is kept in etcd, one record per logical cluster and one per tenant
// (hub/fairness.TreeOf: a person's home tree or a top-level workspace
// tree), under <prefix>/wharf.dev/usage/. A storage wrapper (Accountant)
// sits inside the hub's cluster-keying decorator and sees every Create,
// GuaranteedUpdate and Delete of every per-workspace resource, custom
// resources included. Before a write that grows usage it reserves the
// growth in both records with one compare-and-swap transaction; a failed
// write releases it, and a delete decrements after it succeeded. Because
// the reservation is a CAS on records shared by every replica, concurrent
// writes through any number of replicas cannot together pass a ceiling.
// Reservations of one tenant that arrive while a transaction is in flight
// are committed together in the next one (group commit), so concurrent
// writers do not queue on etcd round trips one by one.
//
// Counting drifts when a write cannot be followed: events expire by their
// etcd lease without a delete, a replica crashes between reserving and
// writing, a purge removes keys directly. A reconciler recomputes every
// record from the stored keys at one etcd revision and corrects the
// records by the difference.
//
// # Threat model
//
// The attacker is admin of some workspaces (her home and what she creates
// below it). She may:
//
//   - write many or large objects of any kind, or grow existing ones by
//     update, patch, server-side apply, or the status subresource: every
//     write path ends in the storage calls counted here, so all of them
//     are refused at the ceiling (403 "exceeded quota", kube's wording);
//   - create child workspaces, each of which costs objects of its own:
//     the Workspace objects count as workspaces against the parent and
//     the tenant;
//   - try to raise her own ceilings by writing the quota.wharf.dev/
//     annotations on a Workspace she administers, on any write path:
//     admission refuses any change of them by anyone but hub
//     administrators (Admission);
//   - spread writes over several replicas at once: the CAS on shared
//     records serialises them.
//
// Deletes, and updates that do not grow usage, are never refused. Hub
// administrators and the hub's own writes (side effects of an admitted
// request, controllers, the loopback client) are never refused, but what
// they store is counted.
package quota
