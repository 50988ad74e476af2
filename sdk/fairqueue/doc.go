// Package fairqueue is the work queue for a provider controller that
// serves every workspace that enabled the provider: tenants take turns.
//
// A controller fed by one wildcard informer (sdk/clusters) and one FIFO
// work queue handles items in arrival order, so a tenant that creates
// thousands of objects delays every other tenant's object by its whole
// backlog (issue 24, B-D: 6,720 Greetings of the hello sample left another
// tenant's Greeting unanswered for 24 minutes). [New] returns client-go's
// rate-limiting work queue (k8s.io/client-go/util/workqueue: deduplication,
// one worker per item at a time, AddAfter, AddRateLimited with per-item
// exponential backoff, its metrics) built over a pluggable store
// (workqueue.TypedQueueConfig.Queue) that takes turns between tenants:
//
//   - Get hands out the oldest item of the next tenant in a round-robin
//     ring of the tenants with items waiting; each tenant's items come in
//     the order they were added. An item of a tenant with nothing else
//     waiting is handed out after at most one item of each other tenant.
//   - An item already waiting is not queued twice and keeps its place.
//   - Each tenant has at most Config.MaxPerTenant items waiting. An item
//     added beyond that is dropped, and the tenant is marked: once the
//     worker is done with its last waiting item, Config.Resync is called
//     with the tenant, and must add again that tenant's items that still need work
//     (read from the informer's cache, which holds them all anyway). So a
//     backlog costs the queue at most MaxPerTenant keys per tenant, and
//     nothing is lost: the controller is level-triggered and the resync
//     is the relist of that tenant alone. A controller without a Resync
//     relies on its informer's periodic resync instead.
//
// The tenant of an item is Config.TenantOf. For items keyed by logical
// cluster, [Tenants] names the tenant the way the hub does (hub/fairness
// TreeOf): a person's home tree root:users:<label> and everything below
// it, or a top-level workspace tree root:<x> and everything below it, from
// workspace paths the provider learned from the hub's verified identity
// headers ([Tenants.Learn], [Tenants.Middleware]); a cluster whose path it
// has not learned is a tenant of its own, as in the hub's queues, so it
// neither joins nor delays anybody else's turn. Objects carry only their
// logical cluster id (the wharf.dev/cluster annotation), never a path: a
// path read from an object a tenant writes would let her join another
// tenant's turn.
//
// What the queue does not bound is how long one item takes: keep
// reconciles short, and back off with AddRateLimited.
//
// Like the rest of sdk, this package imports nothing from the hub, the
// apiserver or etcd.
package fairqueue
