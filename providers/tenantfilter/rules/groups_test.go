package rules

import "testing"

func TestMatchAPIGroup(t *testing.T) {
	tests := []struct {
		pattern, group, version string
		want                    bool
	}{
		{"", "", "v1", true},
		{"", "apps", "v1", false},
		{"*", "", "v1", true},
		{"*", "storage.k8s.io", "v1", true},
		{"apps", "apps", "v1", true},
		{"apps", "apps", "v2beta1", true},
		{"apps", "appsx", "v1", false},
		{"apps/v1", "apps", "v1", true},
		{"apps/v1", "apps", "v1beta1", false},
		{"apps/*", "apps", "v1beta1", true},
		{"*/v1", "apps", "v1", true},
		{"*/v1", "apps", "v2", false},
		{"*/v2", "storage.k8s.io", "v1", false},
		{"a*s/v1", "apps", "v1", true},
		{"a*s/v1", "abs", "v1", true},
		{"a*s/v1", "batch", "v1", false},
		// dots are literal, not "any character"
		{"storage.k8s.io", "storageXk8sXio", "v1", false},
		{"storage.k8s.io", "storage.k8s.io", "v1", true},
		{"*.k8s.io", "storage.k8s.io", "v1", true},
		{"*.k8s.io", "example.com", "v1", false},
		{"storage*io", "storage.k8s.io", "v1", true},
		// no other glob syntax
		{"app?", "apps", "v1", false},
		{"[a]pps", "apps", "v1", false},
		{"a**s", "as", "v1", true},
	}
	for _, tt := range tests {
		if got := MatchAPIGroup(tt.pattern, tt.group, tt.version); got != tt.want {
			t.Errorf("MatchAPIGroup(%q, %q, %q) = %v, want %v", tt.pattern, tt.group, tt.version, got, tt.want)
		}
	}
}

func TestMatchResourceAndEmptyLists(t *testing.T) {
	if matchAnyGroup(nil, "", "v1") {
		t.Error("empty apiGroups must match nothing")
	}
	if matchResource(nil, "nodes") {
		t.Error("empty resources must match nothing")
	}
	if !matchResource([]string{"*"}, "nodes") || !matchResource([]string{"pods", "nodes"}, "nodes") || matchResource([]string{"node"}, "nodes") {
		t.Error("resource matching wrong")
	}
}

func TestGlobalVerbs(t *testing.T) {
	tests := []struct {
		ops     []string
		want    []string
		wantErr bool
	}{
		{nil, []string{"get", "list"}, false},
		{[]string{"List"}, []string{"get", "list"}, false},
		{[]string{"Get"}, []string{"get"}, false},
		{[]string{"List", "Get"}, []string{"get", "list"}, false},
		{[]string{"Update"}, nil, true},
		{[]string{"Get", "Delete"}, nil, true},
		{[]string{"list"}, nil, true},
	}
	for _, tt := range tests {
		v, err := globalVerbs(tt.ops)
		if (err != nil) != tt.wantErr {
			t.Errorf("globalVerbs(%v) err = %v", tt.ops, err)
			continue
		}
		if err != nil {
			continue
		}
		var got []string
		for _, verb := range []string{"get", "list", "watch", "update", "patch", "delete"} {
			if v[verb] {
				got = append(got, verb)
			}
		}
		if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) || (len(got) > 1 && got[1] != tt.want[1]) {
			t.Errorf("globalVerbs(%v) = %v, want %v", tt.ops, got, tt.want)
		}
	}
}
