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
// resources included. A write that grows usage is checked against both
// records before it reaches etcd; a failed write gives its reservation
// back, a delete or a shrinking update releases after it succeeded.
//
// The records change only by compare-and-swap transactions, and so that
// this costs no etcd round trip per write, a replica reserving growth also
// takes a grant of headroom (Ledger, record.Grants): a few dozen objects
// or a MiB, at most a quarter of the room left, in whole multiples of the
// write, none near a ceiling. The tenant's next writes through that
// replica are admitted from memory against the grant; what they stored,
// and what deletes released, is written within flushDelay, many writes in
// one transaction (group commit): the tenant's record with at most
// txnClusters workspace records, a tenant with more split over several,
// each moving exactly its workspaces' part of the tenant's usage, since
// etcd refuses a transaction of more than --max-txn-ops operations
// (ledger_commit.go). Every replica counts the others' grants
// as used, so all replicas together never pass a ceiling (a grant only
// keeps room from the others until it is used or expires); a grant not
// renewed for grantTTL (its replica crashed) is dropped by the next
// replica that commits.
//
// Writes are measured as the store writes them (size.go): the store's
// encoding without the resourceVersion etcd does not store, with the
// cluster annotation the hub stamps, so that an object's create, updates
// and delete add up to nothing. Each write is measured once per request,
// in admission, and the measure is reused by hub/storecap and by the
// counting storage (writesize.go). Dry runs, which never reach storage,
// are answered in admission as the real write would be, and charge
// nothing (admission_write.go). A purged workspace's record is removed
// and what it held taken from its tenant's in one transaction (per
// txnClusters of a deleted subtree's workspaces; Ledger.Purge).
//
// Counting drifts when a write cannot be followed: events expire by their
// etcd lease without a delete, a replica crashes between reserving and
// writing. A reconciler recomputes every record from the stored keys at
// one etcd revision and corrects the records by the difference.
//
// # Threat model
//
// The attacker is admin of some workspaces (her home and what she creates
// below it). She may:
//
//   - write many or large objects of any kind, or grow existing ones by
//     update, patch, server-side apply, or the status subresource: every
//     write path ends in the storage calls counted here, so all of them
//     are refused at the ceiling (403 "exceeded quota", kube's wording),
//     and so are their dry runs;
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
