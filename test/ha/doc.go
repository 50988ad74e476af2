// Package ha is Wharf's high-availability and fault test bed: real
// processes on loopback, nothing simulated.
//
//   - three etcd members (the etcd binary of the kube tools build) with
//     TLS between every party;
//   - two wharf-hub replicas on that etcd, serving one certificate from a
//     test CA;
//   - Debian haproxy in front, passing TLS through and health-checking
//     each replica's /readyz;
//   - a Go load generator that records every write the server
//     acknowledged (a 2xx, with the object's name and resourceVersion),
//     watches that resume from their last resourceVersion, and a prober of
//     the single-replica probe provider (singleprobe), which logs every
//     request it served under its instance id.
//
// Faults are kill -9 and SIGTERM of those processes. Each case prints its
// figures as a table; TestMain prints them all again at the end. The soak
// runs 30 s in `make test` and WHARF_SOAK (e.g. 5m, `make soak`) long.
package ha
