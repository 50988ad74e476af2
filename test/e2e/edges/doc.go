// Package edges holds the end-to-end tests of the edges feature (issue 13):
// the real hub binary loading the real edges provider (and the probe
// provider of test/e2e/edgeprobe), the real wharf-agent dialing out to it,
// a real kube-apiserver (test/kube) as the edge cluster, the system sshd
// (test/sshd) as the server edge, and the real wharf CLI, kubectl and ssh.
//
// Most scenarios share one hub and one kube fixture (TestEdges and its
// subtests) to keep the package within a few minutes on two cores; the
// two-replica scenario starts its own hubs on one etcd. Waiting is always
// eventually-style polling with generous bounds; short liveness intervals
// are set through the provider's config file, never by sleeping.
//
// Network cuts are made with an in-test TCP relay between the agent and the
// hub (relay_test.go) that can be severed and restored.
package edges
