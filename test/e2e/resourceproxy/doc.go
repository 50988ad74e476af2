// Package resourceproxy holds the end-to-end tests of the resource-proxy
// provider against a real target: the kube-apiserver fixture (test/kube)
// with two replicas behind the default/kubernetes EndpointSlice.
//
// The proxy's HTTP handler runs in-process and is called the way the
// hub's aggregation route calls it: identity headers and
// X-Kedge-Original-Path set, the /clusters/<ws> prefix removed. The
// client workspace's namespaces and the kubeconfig Secret are given to the
// handler directly (the two things the hub would answer). Time-driven
// thresholds run on a fake clock, so no test sleeps through them.
package resourceproxy
