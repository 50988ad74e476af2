// Package leases decides which hub replica runs each replicas: single
// provider. The replicas compete for one coordination.k8s.io/v1 Lease per
// provider (kube-system/provider-<name> in the root workspace), through
// the hub's own API and client-go leader election; [Gate] implements
// plugins.Gate on top.
//
// # Guarantees
//
//   - At most one replica runs the plugin as long as the timings hold: a
//     holder that cannot renew for RenewDeadline stops leading, and the
//     plugin host stops the plugin (a polite Stop bounded by 3 s, then the
//     process-group kill) before any other replica may take the Lease,
//     which needs LeaseDuration without renewal. LeaseDuration −
//     RenewDeadline (4 s by default) is the time the old holder has to
//     stop. Like any lease this assumes clocks run at similar rates; there
//     is no fencing token.
//   - A replica that stops leading gives the Lease up only after the
//     plugin is stopped, so a clean shutdown hands over within one retry
//     period rather than a whole LeaseDuration.
//   - A killed holder is replaced after at most LeaseDuration plus about two
//     retry periods (12 s + 1–2.2 s + 1 s by default: a candidate measures
//     expiry from when it last saw the Lease change), plus the plugin's
//     start. The Lease is renewed every RetryPeriod, one small write per
//     single provider per second.
package leases
