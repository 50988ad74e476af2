package quota

import (
	"context"
	"errors"
	"testing"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/etcd"
)

// A ceiling lowered while the replica holds a grant sized under the old
// one holds at once (attack row r24:13): without this, the writes the
// grant covered were admitted from memory past the new ceiling.
func TestLedgerLoweredCeilingHoldsAgainstGrant(t *testing.T) {
	l := NewLedger(etcd.NewWriter(startEtcd(t)), "/registry")
	const id, tenant = cluster.ID("eeeeeeeeeeeeeeee"), "root:lowered"
	one := Usage{Objects: 1, Bytes: 10}
	wide, ten := Limits{Objects: 1000}, Limits{Objects: 1000}
	for i := 0; i < 2; i++ {
		if err := l.apply(&change{cluster: id, tenant: tenant, delta: one, enforce: true, ws: wide, ten: ten}); err != nil {
			t.Fatal(err)
		}
	}
	// The hub admin lowers the workspace's ceiling to 5: room for 3.
	for _, tc := range []struct {
		name string
		ws   Limits
		want int
	}{
		{name: "lowered", ws: Limits{Objects: 5}, want: 3},
		{name: "raised again", ws: Limits{Objects: 8}, want: 3},
	} {
		admitted := 0
		for i := 0; i < 10; i++ {
			err := l.apply(&change{cluster: id, tenant: tenant, delta: one, enforce: true, ws: tc.ws, ten: ten})
			var ex *Exceeded
			switch {
			case err == nil:
				admitted++
			case !errors.As(err, &ex):
				t.Fatalf("%s: reserve %d: %v", tc.name, i, err)
			}
		}
		if admitted != tc.want {
			t.Errorf("%s to %d objects: %d of 10 admitted, want %d", tc.name, tc.ws.Objects, admitted, tc.want)
		}
	}
	l.Flush()
	ws, _, err := l.Get(context.Background(), id, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Objects != 8 {
		t.Errorf("the workspace holds %d objects, want 8", ws.Objects)
	}
}
