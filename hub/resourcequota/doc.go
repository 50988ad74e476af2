// Package resourcequota serves kube's object-count ResourceQuotas in every
// workspace: an admission plugin that charges each namespaced create
// against the quotas of its namespace (count/<resource>[.<group>] and the
// legacy names such as configmaps), and a controller that recounts
// status.used from the store.
//
// # Threat model
//
// The attacker is admin of some workspaces. A workspace's quotas are her
// own tool to bound what she or the people she lets in may create; they
// never loosen the hub's ceilings (hub/quota), which apply besides. So
// that she cannot reach another workspace's quotas, every read and write
// of a quota goes through the cluster-keyed storage with the request's
// workspace, and objects are counted under that workspace's keys only.
// As in kube, nobody is exempt from a namespace's quota (hub admins
// neither); the hub's own writes through storage do not pass admission
// and so are not refused, only counted by the controller.
//
// Counting is kube's: admission bumps status.used by compare-and-swap
// before the object is stored (a failed store leaves used one too high
// until the controller's next pass); the controller recounts when a quota
// is created, on every delete in a namespace with quotas, and
// periodically; admission counts a name the quota has no used value for
// yet. Concurrent creates racing a recount may, as in kube, pass
// a quota by the number of creates in flight.
package resourcequota
