// Package benchkit holds the pieces shared by the wharf-hub benchmark
// commands under test/bench: starting and stopping a wharf-hub process with
// its own embedded etcd on loopback (Hub), a bounded worker pool (Pool),
// latency recording and nearest-rank percentiles (Recorder, Summary),
// workspace helpers (CreateWorkspace, WaitDefaultNamespace) and small
// formatting and command-line helpers used by their reports.
//
// It is test tooling, not product code: it favours simple, explicit
// behaviour over configurability.
package benchkit
