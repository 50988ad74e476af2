package fairness

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
)

// fixedSizes knows one object's size, for tenant "tree:mine" only.
type fixedSizes int64

func (f fixedSizes) StoredSize(_ context.Context, tenant string, info *request.RequestInfo) (int64, bool) {
	if tenant != "tree:mine" || info.Name != "big" {
		return 0, false
	}
	return int64(f), true
}

func TestStoredSeats(t *testing.T) {
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 400, Mutating: 200, TenantReadOnly: 40, TenantMutating: 20},
		HubQueues: 8, Clock: eventclock.Real{}, Stored: fixedSizes(960_076),
	})
	if err != nil {
		t.Fatal(err)
	}
	named := func(verb, name, sub string) *request.RequestInfo {
		return &request.RequestInfo{IsResourceRequest: true, Verb: verb, Resource: "configmaps", Namespace: "default", Name: name, Subresource: sub}
	}
	for _, tt := range []struct {
		name   string
		tenant string
		info   *request.RequestInfo
		kind   Kind
		want   uint64
	}{
		{"a tiny patch of a 960 KB object: the most one write may take", "tree:mine", named("patch", "big", ""), Mutating, 50},
		{"an update of its status", "tree:mine", named("update", "big", "status"), Mutating, 50},
		{"a GET of it: 15 seats at 64 KiB a seat", "tree:mine", named("get", "big", ""), ReadOnly, 15},
		{"another tenant is not weighed by what it may not see", "tree:other", named("get", "big", ""), ReadOnly, 0},
		{"an object of unknown size", "tree:mine", named("patch", "small", ""), Mutating, 0},
		{"a delete is not weighed", "tree:mine", named("delete", "big", ""), Mutating, 0},
		{"a list is weighed by the estimate", "tree:mine", &request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "configmaps"}, ReadOnly, 0},
	} {
		if got := c.storedSeats(context.Background(), tt.tenant, tt.info, tt.kind); got != tt.want {
			t.Errorf("%s: %d seats, want %d", tt.name, got, tt.want)
		}
	}
}
