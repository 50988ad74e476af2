// Package revdialbench compares Wharf's revdial with the designs it descends
// from (golang.org/x/build/revdial/v2), with rancher/remotedialer, and with
// raw loopback TLS, side by side in one run.
//
// It is its own module so that the peers never enter Wharf's go.mod. Run it
// with `make bench`, or here with
//
//	GOTOOLCHAIN=go1.27.3 go test -run='^$' -bench=Compare -benchtime=1x .
//
// (remotedialer's current release needs Go 1.27.3). Set
// WHARF_BENCH_BYTES to shrink the 1 GiB throughput transfer.
//
// Every peer carries the same agent-side application (see app_test.go), so
// the numbers compare tunnels, not applications. remotedialer's agent dials
// that application over loopback TCP, because that is how it works: it
// reaches services by address rather than handing connections to a
// listener.
package revdialbench
