package catalog

import (
	"fmt"
	"testing"

	"github.com/wharfhub/wharf/sdk/plugin"
)

func TestDecodeCRDsRefusesReservedGroups(t *testing.T) {
	for _, tc := range []struct {
		group string
		ok    bool
	}{
		{"hello.wharf.dev", true},
		{"example.com", true},
		{"wharf.dev", false}, // the hub's own etcd records live under <prefix>/wharf.dev/
		{"tenancy.wharf.dev", false},
		{"providers.wharf.dev", false},
		{"apps.k8s.io", false},
		{"core", false},
	} {
		t.Run(tc.group, func(t *testing.T) {
			crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"secrets.%s"},"spec":{"group":%q}}`, tc.group, tc.group)
			_, err := decodeCRDs(&plugin.Descriptor{CRDs: [][]byte{[]byte(crd)}})
			if (err == nil) != tc.ok {
				t.Fatalf("group %q: err = %v, want ok=%v", tc.group, err, tc.ok)
			}
		})
	}
}
