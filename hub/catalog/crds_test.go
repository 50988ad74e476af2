package catalog

import (
	"fmt"
	"testing"

	"github.com/wharfhub/wharf/sdk/plugin"
)

func TestDecodeCRDsRefusesReservedGroups(t *testing.T) {
	for _, tc := range []struct {
		provider, group string
		ok              bool
	}{
		{"hello", "hello.wharf.dev", true},
		{"hello", "example.com", true},
		{"hello", "wharf.dev", false}, // the hub's own etcd records live under <prefix>/wharf.dev/
		{"hello", "tenancy.wharf.dev", false},
		{"hello", "providers.wharf.dev", false},
		{"hello", "apps.k8s.io", false},
		{"hello", "core", false},
		{"edges", "edges.wharf.dev", true},
		{"hello", "edges.wharf.dev", false}, // a shipped provider's group
		{"hello", "proxy.wharf.dev", false},
	} {
		t.Run(tc.provider+"/"+tc.group, func(t *testing.T) {
			crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"secrets.%s"},"spec":{"group":%q}}`, tc.group, tc.group)
			_, err := decodeCRDs(&plugin.Descriptor{Name: tc.provider, CRDs: [][]byte{[]byte(crd)}})
			if (err == nil) != tc.ok {
				t.Fatalf("group %q: err = %v, want ok=%v", tc.group, err, tc.ok)
			}
		})
	}
}
