package storage

import (
	"testing"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestClusterKey(t *testing.T) {
	const p = "/core/configmaps"
	tests := []struct {
		key     string
		id      cluster.ID
		want    string
		wantErr bool
	}{
		{p, "abc", p + "/abc", false},
		{p + "/ns", "abc", p + "/abc/ns", false},
		{p + "/ns/name", "abc", p + "/abc/ns/name", false},
		{p + "/name", cluster.Global, p + "/system:global/name", false},
		{p + "x/ns/name", "abc", "", true},
		{"/core/secrets/ns/name", "abc", "", true},
		{p + "/ns/name", "", "", true},
		{p + "/ns/name", "a/b", "", true},
	}
	for _, tt := range tests {
		got, err := ClusterKey(p, tt.key, tt.id)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ClusterKey(%q,%q) = %q,%v want %q,err=%v", tt.key, tt.id, got, err, tt.want, tt.wantErr)
		}
		if err == nil {
			if id, ok := ClusterFromKey(p, got); !ok || id != tt.id {
				t.Errorf("ClusterFromKey(%q) = %q,%v", got, id, ok)
			}
		}
	}
	if ResourcePrefix("", "configmaps") != "/core/configmaps" || ResourcePrefix("rbac.authorization.k8s.io", "roles") != "/rbac.authorization.k8s.io/roles" {
		t.Error("ResourcePrefix")
	}
}
