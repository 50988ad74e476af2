// Package controller holds the work loop and the queues the hub's
// controllers share.
//
// # Threat model
//
// The attacker is admin of some workspaces (her home tree, or a top-level
// workspace tree) and can make any amount of background work for the
// hub's controllers that serve every workspace: thousands of objects
// whose owners are gone (garbage collection), hundreds of workspace
// deletions held by finalizers, namespaces and CRDs to clean up, churn of
// aggregated ClusterRoles, provider bindings requeued at once, ResourceQuotas
// that name hundreds of resources to count, APIServices whose provider
// answers discovery slowly. With one FIFO queue per controller, every other
// tenant's work waited behind all of it (issue 24, B4 and B7).
//
// NewFair gives each controller upstream's work queue over a store that
// takes turns between tenants (hub/fairness TreeOf of the work's logical
// cluster): an item of a tenant with nothing else queued is handed out
// after at most one item of each other tenant with work. What it does not
// bound is how long one item takes, so controllers keep their items short
// (a held workspace deletion looks at its own workspace only, and backs
// off; hub/workspaces). The tenant is read from the index in memory and
// never from anything a tenant writes; an unknown cluster is a tenant of
// its own. Metrics name queues, never tenants, so a tenant cannot grow
// the hub's series.
package controller
