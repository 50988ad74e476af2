// Package leases decides which hub replica runs each replicas: single
// provider. The replicas compete for one coordination.k8s.io/v1 Lease per
// provider (kube-system/provider-<name> in the root workspace), through
// the hub's own API; [Gate] implements plugins.Gate on top.
//
// It is its own small election rather than client-go's leader election
// because client-go renews every RetryPeriod and measures expiry in whole
// retry periods: failing over in under 5 s would cost two writes a second
// per provider. Here writes (RetryPeriod) and reads (PollPeriod) are
// separate knobs.
//
// # Guarantees
//
//   - Fencing. The holder notes its local time just before each renewal
//     write; once RenewDeadline has passed since the start of the latest
//     renewal that succeeded, it stops the plugin (the plugin host
//     withdraws the provider's transport at once, then stops the process,
//     polite for at most 500 ms, then the process-group kill). Each
//     renewal request is bounded by that deadline, so a hung API cannot
//     hold the fence back. A candidate takes the Lease only after it has
//     seen the same revision, unchanged, for LeaseDuration on its own
//     clock, counting from its first sighting, which comes after that
//     revision's write began; the take-over is an update on the revision
//     read, so two candidates cannot both win. A renewal is a JSON patch
//     of renewTime whose first operation tests that the holder is still
//     this replica: if it succeeds, no take-over came before it (the test
//     would fail) and none can come within LeaseDuration after it (it
//     changed the revision after it began). So the old holder has
//     LeaseDuration − RenewDeadline (0.75 s by default) to be gone before
//     a new one may start. Like any lease this assumes clocks run at
//     similar rates (not that they agree); there is no fencing token.
//   - Renewals under load. A renewal starts every RetryPeriod whether or
//     not the previous one returned, every PollPeriod while one is still
//     running (at most three at once): the patches do not conflict, and
//     the fence follows the latest start that succeeded. A hub whose CPU a tenant's requests take (review 2 of
//     issue 24, B-A to B-C) answers some writes in 1–2.5 s; waiting for a
//     slow renewal before starting the next, and then a whole period
//     more, lost the lease to two renewals of 1.2 s, or to one of 2.3 s.
//     Now the lease is lost only when none of the renewals begun after the
//     last success answers before RenewDeadline after that success began:
//     when every renewal takes more than RenewDeadline − RetryPeriod
//     (2.25 s), or the API refuses them. One write per RetryPeriod, two
//     a second only while renewals are slow.
//     Renewals slower than RetryPeriod are logged ("Slow provider lease
//     renewal").
//   - A replica that stops leading (shutdown, handover, or a provider it
//     cannot run) releases the Lease only after the plugin is stopped and
//     its renewals in flight returned, by a patch with the same test, so a
//     clean shutdown hands over within one PollPeriod of the others.
//   - A killed holder is replaced after at most LeaseDuration + PollPeriod
//     (4 s + 0.5 s by default) plus the plugin's start; on average about
//     LeaseDuration − RetryPeriod/2 + PollPeriod. The holder writes the
//     Lease every RetryPeriod (1 s): 60 writes a minute per single
//     provider, where client-go's election with the same failover would
//     need 120. A renewal may take up to RenewDeadline − RetryPeriod
//     (2.25 s) before the holder stops: with 1.5 s, renewals on a loaded
//     machine missed it and a lone replica restarted its plugin. Every
//     other replica reads it every PollPeriod.
package leases
