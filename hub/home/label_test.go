package home

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestLabel(t *testing.T) {
	long := strings.Repeat("very-long-name.", 10) + "@example.com"
	tests := []struct {
		name, prefix string
	}{
		{"alice", "alice"},
		{"alice@example.com", "alice-example-com"},
		{"Alice@Example.COM", "alice-example-com"},
		{"alice.example.com", "alice-example-com"},
		{"alice_example_com", "alice-example-com"},
		{"oidc:bob", "oidc-bob"},
		{"https://issuer.example.com#1234567890", "https-issuer-example-com-1234567890"},
		{"--x--", "x"},
		{"Jürgen Müller", "j-rgen-m-ller"},
		{"山田太郎", "u"},
		{"", "u"},
		{"🙂@example.com", "example-com"},
		{long, "very-long-name-very-long-name-very-long-n"[:40]},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := Label(tt.name)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("Label(%q) = %q is no DNS label: %v", tt.name, got, errs)
		}
		if len(got) > 54 {
			t.Errorf("Label(%q) = %q is longer than 54", tt.name, got)
		}
		i := strings.LastIndex(got, "-")
		if prefix := got[:i]; prefix != strings.TrimRight(tt.prefix, "-") {
			t.Errorf("Label(%q) = %q, want prefix %q", tt.name, got, tt.prefix)
		}
		if h := got[i+1:]; len(h) != hashLen {
			t.Errorf("Label(%q) = %q: hash %q is not %d characters", tt.name, got, h, hashLen)
		}
		if Label(tt.name) != got {
			t.Errorf("Label(%q) is not stable", tt.name)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("Label(%q) = Label(%q) = %q", tt.name, other, got)
		}
		seen[got] = tt.name
		if _, err := cluster.ParsePath(string(PathOf(tt.name))); err != nil {
			t.Errorf("PathOf(%q): %v", tt.name, err)
		}
	}
}

// TestLabelGolden pins the rule: a change would give every existing user a
// new, empty home.
func TestLabelGolden(t *testing.T) {
	if got, want := Label("alice"), "alice-fpmansl7byak6"; got != want {
		t.Errorf("Label(alice) = %q, want %q", got, want)
	}
}

func TestIsPerson(t *testing.T) {
	tests := []struct {
		u    user.Info
		want bool
	}{
		{&user.DefaultInfo{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}, true},
		{&user.DefaultInfo{Name: "alice@example.com"}, true},
		{&user.DefaultInfo{Name: "oidc:alice", Groups: []string{"oidc:admins"}}, true},
		{&user.DefaultInfo{Name: "wharf-admin", Groups: []string{user.SystemPrivilegedGroup}}, false},
		{&user.DefaultInfo{Name: "system:serviceaccount:default:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default"}}, false},
		{&user.DefaultInfo{Name: "bot", Groups: []string{"system:serviceaccounts:default"}}, false},
		{&user.DefaultInfo{Name: "system:wharf:provider:edges"}, false},
		{&user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}, false},
		{&user.DefaultInfo{Name: user.Anonymous}, false},
		{&user.DefaultInfo{Name: ""}, false},
		{nil, false},
		// Impersonated (or service-account) identities are confined to
		// one workspace: an impersonated alice is not alice.
		{&user.DefaultInfo{Name: "alice", Extra: map[string][]string{cluster.ConfinedExtra: {"c0bob"}}}, false},
		{&user.DefaultInfo{Name: "alice", Extra: map[string][]string{cluster.ConfinedExtra: {}}}, false},
		{&user.DefaultInfo{Name: "alice", Extra: map[string][]string{"example.com/team": {"a"}}}, true},
	}
	for _, tt := range tests {
		if got := IsPerson(tt.u); got != tt.want {
			t.Errorf("IsPerson(%+v) = %v, want %v", tt.u, got, tt.want)
		}
	}
}

func TestPublicExtra(t *testing.T) {
	got := PublicExtra(map[string][]string{
		"authentication.kubernetes.io/credential-id": {"JTI=1"},
		"wharf.dev/idp":          {"zitadel"},
		"wharf.dev/refresh-ref":  {"x"},
		"oidc/ID-Token":          {"eyJ..."},
		"wharf.dev/session-id":   {"s"},
		"example.com/api-secret": {"s"},
	})
	if len(got) != 2 || got["wharf.dev/idp"][0] != "zitadel" || got["authentication.kubernetes.io/credential-id"][0] != "JTI=1" {
		t.Errorf("PublicExtra = %v", got)
	}
	if PublicExtra(nil) != nil {
		t.Error("PublicExtra(nil) != nil")
	}
}

func TestHomeOrRootWithoutHome(t *testing.T) {
	m := NewManager(nil, nil)
	for _, u := range []user.Info{
		&user.DefaultInfo{Name: "system:serviceaccount:default:bot", Groups: []string{"system:serviceaccounts"}},
		&user.DefaultInfo{Name: "wharf-admin", Groups: []string{user.SystemPrivilegedGroup}},
	} {
		if got, err := m.HomeOrRoot(context.Background(), u); err != nil || got != "root" {
			t.Errorf("HomeOrRoot(%s) = %q, %v", u.GetName(), got, err)
		}
	}
}
