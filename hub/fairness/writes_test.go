package fairness

import (
	"net/http"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
)

func TestWriteSeats(t *testing.T) {
	const share, most = 20, 50
	for _, tt := range []struct {
		name   string
		length int64
		want   uint64
	}{
		{"no body (a delete)", 0, 1},
		{"a small ConfigMap", 300, 1},
		{"a Deployment applied by kubectl, with its last-applied annotation", 6 << 10, 1},
		{"exactly one seat's worth", WriteBytesPerSeat, 1},
		{"one byte over a seat", WriteBytesPerSeat + 1, 2},
		{"a large Deployment applied by kubectl", 14 << 10, 2},
		{"100 KB", 100_000, 13},
		{"a tenant's share's worth", share * WriteBytesPerSeat, share},
		{"B-A's 889 KB ConfigMap of 60,000 keys: more than the share, bounded", 889_000, most},
		{"over the hub's body limit (3 MiB)", 4 << 20, most},
		{"unknown length (chunked): the whole share", -1, share},
	} {
		if got := writeSeats(tt.length, share, most); got != tt.want {
			t.Errorf("%s (%d bytes): %d seats, want %d", tt.name, tt.length, got, tt.want)
		}
	}
}

// TestControllerWidths: a write takes seats by its body's announced
// length, and an API document by its size (unknown: the whole share),
// before anything is read; what is over the share is refused (no queue
// here).
func TestControllerWidths(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	alice := &user.DefaultInfo{Name: "alice"}
	admin := &user.DefaultInfo{Name: "hubadmin"}
	const big = 889_000
	for _, tt := range []struct {
		name string
		reqs []testReq
	}{
		{"small writes take a seat each", []testReq{
			{u: bob, verb: "create", length: 4 << 10, wantHeld: true},
			{u: bob, verb: "create", length: 4 << 10, wantHeld: true},
			{u: bob, verb: "patch", length: 4 << 10, wantHeld: true},
			{u: bob, verb: "update", length: 4 << 10, wantHeld: true},
			{u: bob, verb: "create", length: 4 << 10, want: http.StatusTooManyRequests},
		}},
		{"a large body takes the whole share, others are served", []testReq{
			{u: bob, verb: "create", length: big, wantHeld: true},
			{u: bob, verb: "create", length: 10, want: http.StatusTooManyRequests},
			{u: bob, verb: "create", length: big, want: http.StatusTooManyRequests},
			{u: bob, verb: "get", wantHeld: true},
			{u: alice, verb: "create", length: 10, wantHeld: true},
			{u: admin, verb: "create", length: big, wantHeld: true},
		}},
		{"a large body runs only while nothing else of its tenant's writes does", []testReq{
			{u: bob, verb: "create", length: 10, wantHeld: true},
			{u: bob, verb: "patch", length: big, want: http.StatusTooManyRequests},
		}},
		{"a body of unknown length takes the whole share", []testReq{
			{u: bob, verb: "update", length: -1, wantHeld: true},
			{u: bob, verb: "delete", want: http.StatusTooManyRequests},
			{u: alice, verb: "create", length: 10, wantHeld: true},
		}},
		{"medium writes share the share by size", []testReq{
			{u: bob, verb: "create", length: 2 * WriteBytesPerSeat, wantHeld: true},
			{u: bob, verb: "create", length: WriteBytesPerSeat, wantHeld: true},
			{u: bob, verb: "create", length: WriteBytesPerSeat + 1, want: http.StatusTooManyRequests},
			{u: bob, verb: "create", length: 1, wantHeld: true},
		}},
		{"an API document of unknown size takes the whole read share", []testReq{
			{u: bob, verb: "get", path: "/openapi/v2", wantHeld: true},
			{u: bob, verb: "get", want: http.StatusTooManyRequests},
			{u: bob, verb: "get", path: "/version", want: http.StatusTooManyRequests},
			{u: alice, verb: "get", path: "/apis", wantHeld: true},
			{u: bob, verb: "create", length: 10, wantHeld: true},
		}},
		{"other non-resource reads take a seat", []testReq{
			{u: bob, verb: "get", path: "/version", wantHeld: true},
			{u: bob, verb: "get", path: "/api/whoami", wantHeld: true},
			{u: bob, verb: "get", path: "/api/usage", wantHeld: true},
			{u: bob, verb: "get", path: "/metrics", wantHeld: true},
			{u: bob, verb: "get", path: "/version", want: http.StatusTooManyRequests},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewController(ControllerConfig{
				Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 4, TenantMutating: 4},
				HubQueues: 8, Estimator: NewEstimator(100), Clock: eventclock.Real{},
			})
			if err != nil {
				t.Fatal(err)
			}
			runTable(t, c, tt.reqs)
		})
	}
}
