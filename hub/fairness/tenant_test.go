package fairness

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
)

func TestTreeOf(t *testing.T) {
	bobHome := string(home.PathOf("bob"))
	for _, tt := range []struct{ path, want string }{
		{"root", "root"},
		{"root:users", "root:users"},
		{bobHome, bobHome},
		{bobHome + ":child", bobHome},
		{bobHome + ":child:grandchild", bobHome},
		{"root:acme", "root:acme"},
		{"root:acme:team-a:x", "root:acme"},
		{"root:usersx:y", "root:usersx"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			if got := TreeOf(cluster.Path(tt.path)); string(got) != tt.want {
				t.Fatalf("TreeOf(%s) = %s, want %s", tt.path, got, tt.want)
			}
		})
	}
}

func TestTenant(t *testing.T) {
	bobHome := string(home.PathOf("bob"))
	paths := map[cluster.ID]cluster.Path{
		"bobhome00000000a": cluster.Path(bobHome),
		"bobchild0000000a": cluster.Path(bobHome + ":child"),
		"bobdeep00000000a": cluster.Path(bobHome + ":child:deeper"),
		"acmeteam0000000a": "root:acme:team-a",
		"root000000000000": "root",
	}
	k := Keyer{
		IsAdmin: func(u user.Info) bool { return u.GetName() == "hubadmin" },
		PathOf: func(_ context.Context, id cluster.ID) (cluster.Path, error) {
			if p, ok := paths[id]; ok {
				return p, nil
			}
			return "", errors.New("not found")
		},
	}
	confined := func(name string, ids ...string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: []string{"system:serviceaccounts"}, Extra: map[string][]string{cluster.ConfinedExtra: ids}}
	}
	for _, tt := range []struct {
		name       string
		u          user.Info
		want       string
		wantExempt bool
	}{
		{"a person is her home tree", &user.DefaultInfo{Name: "bob", Groups: []string{"devs"}}, "tree:" + bobHome, false},
		{"a service account of her home", confined("system:serviceaccount:default:a", "bobhome00000000a"), "tree:" + bobHome, false},
		{"a service account of a child", confined("system:serviceaccount:default:b", "bobchild0000000a"), "tree:" + bobHome, false},
		{"a service account deeper down", confined("system:serviceaccount:x:c", "bobdeep00000000a"), "tree:" + bobHome, false},
		{"an identity impersonated in her home", &user.DefaultInfo{Name: "alice", Extra: map[string][]string{cluster.ConfinedExtra: {"bobhome00000000a"}}}, "tree:" + bobHome, false},
		{"an admin's name confined to her home", &user.DefaultInfo{Name: "hubadmin", Extra: map[string][]string{cluster.ConfinedExtra: {"bobhome00000000a"}}}, "tree:" + bobHome, false},
		{"system:masters confined to her home", &user.DefaultInfo{Name: "x", Groups: []string{user.SystemPrivilegedGroup}, Extra: map[string][]string{cluster.ConfinedExtra: {"bobhome00000000a"}}}, "tree:" + bobHome, false},
		{"a top-level workspace's tree", confined("system:serviceaccount:default:ci", "acmeteam0000000a"), "tree:root:acme", false},
		{"root", confined("system:serviceaccount:default:ci", "root000000000000"), "tree:root", false},
		{"confined to an unknown workspace", confined("system:serviceaccount:default:x", "unknown00000000a"), Unconfined, false},
		{"confined to two workspaces", confined("system:serviceaccount:default:x", "bobhome00000000a", "acmeteam0000000a"), Unconfined, false},
		{"confined to nothing", confined("system:serviceaccount:default:x"), Unconfined, false},
		{"a provider", &user.DefaultInfo{Name: "system:wharf:provider:hello"}, "user:system:wharf:provider:hello", false},
		{"another person", &user.DefaultInfo{Name: "alice"}, "tree:" + string(home.PathOf("alice")), false},
		{"a hub admin", &user.DefaultInfo{Name: "hubadmin"}, "", true},
		{"system:masters", &user.DefaultInfo{Name: "system:apiserver", Groups: []string{user.SystemPrivilegedGroup}}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, exempt := k.Tenant(context.Background(), tt.u)
			if got != tt.want || exempt != tt.wantExempt {
				t.Fatalf("Tenant = %q, exempt %v; want %q, exempt %v", got, exempt, tt.want, tt.wantExempt)
			}
		})
	}
}

func TestSharedTenant(t *testing.T) {
	k := Keyer{}
	for _, tt := range []struct {
		u      user.Info
		shared bool
	}{
		{&user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, true},
		{nil, true},
		{&user.DefaultInfo{Name: "system:serviceaccount:default:ci", Extra: map[string][]string{cluster.ConfinedExtra: {"unknown"}}}, true},
		{&user.DefaultInfo{Name: "provider:edges"}, false},
		{&user.DefaultInfo{Name: "mallory"}, false},
	} {
		tenant, _ := k.Tenant(context.Background(), tt.u)
		if got := sharedTenant(tenant); got != tt.shared {
			t.Errorf("%v: tenant %q shared %v, want %v", tt.u, tenant, got, tt.shared)
		}
	}
}
