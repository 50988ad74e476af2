// Package resourceproxy benchmarks the resource-proxy provider's handler
// in front of a real two-replica kube-apiserver (test/kube): get, list of
// 1,000 objects and create through the proxy against the same request
// straight to the target (as the same impersonated identity), the time to
// a 503 while every peer is quarantined, and a 100-watcher fan-out. It
// prints, never asserts. Built with -tags rpbench (make bench):
//
//	go test -tags rpbench -run '^$' -bench . -benchtime 1x ./test/bench/resourceproxy
package resourceproxy
