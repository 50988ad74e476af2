// Package objsize remembers how large the hub's big stored objects are,
// so that a request naming one is weighed by what the hub must read,
// rewrite and encode, not only by the body it sends.
//
// # Threat model
//
// The attacker is admin of her home workspace and of everything she
// creates below it. The third outside review (issue 24, C-B) stored one
// ConfigMap of 60,000 keys (960 KB) and then sent 34-byte merge patches of
// it, dry run or not, 20 at once, and GETs of it, 40 at once: each request
// took one seat of her share (only its body was weighed), yet each made
// the hub decode, patch, validate and encode the whole object. Another
// tenant's CRUD fell to 1.4–5.9 ops/s and the edges provider's lease
// fence stopped it four times. So:
//
//   - The size is learned where the hub already holds the stored bytes:
//     the storage decorator's value transformer (hub/storage), on every
//     value written to etcd and every value read from it (gets, lists,
//     the watch cache's list and events). Nothing is encoded to measure
//     it. A write sets the size; a read only raises it, so a read of an
//     old revision (a list at an exact resourceVersion) cannot teach a
//     smaller size than the object now has.
//   - Only objects of at least Threshold bytes are remembered: below it
//     a request keeps the width of its body. The table therefore holds at
//     most a tenant's big objects, which its byte quota bounds.
//   - The table is bounded per tenant (PerTenant entries) and hub-wide
//     (Total). When a tenant is over its bound, its own smallest entry is
//     forgotten; when the hub is over its own, the smallest entry of the
//     tenant holding the most is. A tenant therefore never evicts another
//     tenant's entries while it holds more than they do, and forgetting
//     the smallest keeps the entries that matter (the biggest objects):
//     to make one big object forgotten, a tenant must first store
//     PerTenant objects bigger than it.
//   - Entries are keyed by the etcd key, which carries the workspace's
//     logical cluster: decisions key on the workspace.
//   - A stored size weighs requests of the tenant that owns the object's
//     workspace, and of a caller of another tenant only when the hub's
//     authorizer allows her request (Table.StoredSize). The width is
//     chosen before authorization, so weighing a caller who may not see
//     the workspace by what it holds would tell her whether a big object
//     of that name exists there (through the share of 429s), as the list
//     estimate once did (outside review, row 3); whoever may not make the
//     request gets the width of a missing object. The authorizer is asked
//     only for a known big object, so ordinary requests never pay for it;
//     the owner's tenant may see its own tree, so it is not asked.
package objsize
