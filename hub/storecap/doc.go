// Package storecap keeps the hub's etcd store from filling (issue 24, B1).
//
// etcd has a backend quota. Once its database file reaches it, etcd arms
// a NOSPACE alarm and refuses every write, everybody's, with "database
// space exceeded", and the alarm stays armed after the data is deleted
// until someone disarms it. One tenant could reach that in minutes.
//
// What the hub does:
//
//   - It knows the quota: it sets it on the embedded etcd
//     (--etcd-quota-backend-bytes, 8 GiB by default) and reads an external
//     cluster's from the etcd_server_quota_backend_bytes gauge on each
//     member's /metrics (the smaller of that and the flag, when both are
//     known; etcd's default 2 GiB when neither is).
//   - A Monitor polls Status (dbSize, dbSizeInUse) and AlarmList on an
//     injectable clock. Above the high-water mark
//     (--storage-high-water-fraction of the quota, measured on
//     dbSizeInUse, the bytes live data takes, not on a fragmented file)
//     it compacts etcd to the current revision, so that what tenants
//     deleted stops counting, and defragments when the file is much larger
//     than its content (the embedded member always; an external cluster
//     only with --etcd-defrag-external, because a defragmentation blocks
//     the member and the hub does not own that cluster's other clients).
//   - From half the mark on it compacts all but one gap of history:
//     old revisions count in dbSizeInUse but in no tenant's byte ceiling,
//     so a tenant rewriting a few large objects could otherwise push the
//     store to the mark and have everybody's writes refused.
//   - Once the NOSPACE alarm is armed and the file is below the high-water
//     mark again, it disarms the alarm.
//   - An admission plugin refuses non-admin creates and updates (server
//     side apply, patch, status and dry-run included, custom resources too:
//     apiextensions shares the chain) while the store is above the mark,
//     with 403 Forbidden and a message naming the cause.
//
// # Threat model
//
// The attacker is any person, admin of her home and of every workspace she
// creates. She can write as fast as her share of the in-flight budget
// allows. She must not be able to make the store refuse another tenant's
// deletes and reads, nor the hub's own writes (leases, controllers,
// events: hub admins and the loopback client are exempt), nor leave the
// store unusable after she deletes what she wrote.
//
//   - Between two polls she could write past the mark. Near it (above
//     half of the mark) the plugin therefore adds the size of every
//     write it lets through to the last measured size, so a replica lets
//     through at most one request past the mark between polls. The size
//     is hub/quota's measure of the write (what etcd will store, taken
//     once per request and reused to charge it), or the object's JSON
//     size for resources hub/quota does not count. An update counts only
//     by how much it enlarges the object: the revision it replaces is
//     reclaimable, counted apart, and makes the monitor compact to the
//     previous poll's revision (at most once a poll) instead of refusing
//     (admit.go; outside review 3, C-C). A tenant's rewrite loop is
//     bounded by her write fairness, traffic budget and share of the
//     watch cache history, not by a refusal that hits everyone.
//   - Deletes are never refused, nor updates of an object that is being
//     deleted (they remove finalizers, which a deletion needs). Requests
//     that persist nothing (access and token reviews) are not writes.
//   - Dry-run writes are refused like real ones: a dry run predicts the
//     real request's answer (as kube's ResourceQuota does); it writes
//     nothing, so it is not counted toward the estimate.
//   - The refusal is the same for every non-admin caller and says only
//     that the store is nearly full, not how full: the exact sizes, which
//     tell of other tenants' activity, are in the hub's metrics.
//   - Writes of the hub that bypass admission (direct etcd writes,
//     workspace bootstrap through storage) are the hub's own.
//   - Compacting to the current revision costs watchers on old revisions
//     a relist; it only happens above the mark, at most every five polls.
//     Defragmentation blocks the member while it runs; it only happens
//     when the file is much larger than its content, at most every ten
//     polls.
//
// Per-tenant byte quotas are a separate mechanism; this one protects the
// store as a whole, whoever filled it.
package storecap
