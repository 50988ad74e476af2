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
//     write; once RenewDeadline has passed since the last one that
//     succeeded, it stops the plugin (the plugin host withdraws the
//     provider's transport at once, then stops the process, polite for at
//     most 500 ms, then the process-group kill). Each renewal request is
//     bounded by that deadline, so a hung API cannot hold the fence back. A
//     candidate takes the
//     Lease only after it has seen the same revision, unchanged, for
//     LeaseDuration on its own clock, counting from its first sighting,
//     which comes after that revision's write began. So the old holder has
//     LeaseDuration − RenewDeadline (0.75 s by default) to be gone before a
//     new one may start. The take-over is an update on the revision read,
//     so two candidates cannot both win. Like any lease this assumes
//     clocks run at similar rates (not that they agree); there is no
//     fencing token.
//   - A replica that stops leading (shutdown, handover, or a provider it
//     cannot run) releases the Lease only after the plugin is stopped, so a
//     clean shutdown hands over within one PollPeriod of the others.
//   - A killed holder is replaced after at most LeaseDuration + PollPeriod
//     (4 s + 0.5 s by default) plus the plugin's start; on average about
//     LeaseDuration − RetryPeriod/2 + PollPeriod. The holder writes the
//     Lease every RetryPeriod (1 s): 60 writes a minute per single
//     provider, where client-go's election with the same failover would
//     need 120. A renewal may take up to RenewDeadline − RetryPeriod
//     (2.25 s) before the holder stops: with 1.5 s, renewals on a loaded
//     machine missed it and a lone replica restarted its plugin. Every other replica reads it every PollPeriod.
package leases
