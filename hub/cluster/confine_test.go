package cluster

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestConfinedTo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		u      user.Info
		id     ID
		confin bool
	}{
		{"nil", nil, "", false},
		{"no extra", &user.DefaultInfo{Name: "alice"}, "", false},
		{"other extra", &user.DefaultInfo{Name: "alice", Extra: map[string][]string{"example.com/x": {"c0"}}}, "", false},
		{"one value", &user.DefaultInfo{Name: "alice", Extra: map[string][]string{ConfinedExtra: {"c0"}}}, "c0", true},
		{"two values: confined to none", &user.DefaultInfo{Name: "alice", Extra: map[string][]string{ConfinedExtra: {"c0", "c1"}}}, "", true},
		{"the same value twice: confined to none", &user.DefaultInfo{Name: "alice", Extra: map[string][]string{ConfinedExtra: {"c0", "c0"}}}, "", true},
		{"key without values: confined to none", &user.DefaultInfo{Name: "alice", Extra: map[string][]string{ConfinedExtra: {}}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := ConfinedTo(tc.u)
			if id != tc.id || ok != tc.confin {
				t.Fatalf("ConfinedTo = %q, %v; want %q, %v", id, ok, tc.id, tc.confin)
			}
		})
	}
}
