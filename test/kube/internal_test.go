package kube

import (
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
)

// TestKubectlPathOrder checks the lookup order other e2e tests rely on:
// $KUBECTL, then the tools cache; PATH only when the kube binaries are
// prebuilt (nothing is to be built).
func TestKubectlPathOrder(t *testing.T) {
	onPath := func(string) (string, error) { return "/usr/bin/kubectl", nil }
	notOnPath := func(string) (string, error) { return "", exec.ErrNotFound }
	built := func() (string, error) { return "/cache/abc", nil }
	buildFails := func() (string, error) { return "", errors.New("no go") }
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvKubectl {
				return v
			}
			return ""
		}
	}
	prebuilt := func(k string) string {
		if k == EnvAPIServerBin || k == EnvEtcdBin {
			return "/opt/" + k
		}
		return ""
	}

	tests := []struct {
		name     string
		getenv   func(string) string
		lookPath func(string) (string, error)
		build    func() (string, error)
		want     string
		wantErr  bool
	}{
		{"env wins", env("/opt/kubectl"), onPath, built, "/opt/kubectl", false},
		{"then the tools cache, not PATH", env(""), onPath, built, "/cache/abc/kubectl", false},
		{"PATH when the kube binaries are prebuilt", prebuilt, onPath, built, "/usr/bin/kubectl", false},
		{"prebuilt, none on PATH: the tools cache", prebuilt, notOnPath, built, "/cache/abc/kubectl", false},
		{"then the tools cache", env(""), notOnPath, built, "/cache/abc/kubectl", false},
		{"build failure is an error", env(""), notOnPath, buildFails, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kubectlPath(tc.getenv, tc.lookPath, tc.build)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("kubectlPath = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDecodeManifest(t *testing.T) {
	tests := []struct {
		name      string
		manifest  string
		wantKinds []string
		wantErr   string
	}{
		{
			name:      "multi-document with empty documents",
			manifest:  "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
			wantKinds: []string{"Namespace", "ConfigMap"},
		},
		{
			name:      "json",
			manifest:  `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`,
			wantKinds: []string{"Secret"},
		},
		{name: "missing name", manifest: "apiVersion: v1\nkind: ConfigMap\n", wantErr: "lacks"},
		{name: "not yaml", manifest: "a: [", wantErr: "decode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := decodeManifest([]byte(tc.manifest))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if strings.Join(kinds, ",") != strings.Join(tc.wantKinds, ",") {
				t.Fatalf("kinds = %v, want %v", kinds, tc.wantKinds)
			}
		})
	}
}

func TestWriteTokensRejectsBadUsers(t *testing.T) {
	tests := []struct {
		name  string
		users []User
		ok    bool
	}{
		{"plain users", []User{{Name: "alice", Groups: []string{"a", "b"}}, {Name: "bob"}}, true},
		{"comma in name", []User{{Name: "a,b"}}, false},
		{"empty name", []User{{Name: ""}}, false},
		{"duplicate", []User{{Name: "x"}, {Name: "x"}}, false},
		{"clashes with admin", []User{{Name: AdminUser}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{opts: Options{Users: tc.users}, dir: t.TempDir()}
			err := c.writeTokens()
			if (err == nil) != tc.ok {
				t.Fatalf("writeTokens err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && len(c.userTokens) != len(tc.users)+1 {
				t.Fatalf("%d tokens, want %d", len(c.userTokens), len(tc.users)+1)
			}
		})
	}
}

func TestPortPickerNeverRepeats(t *testing.T) {
	pp := newPortPicker()
	ips := []net.IP{replicaIP(0), replicaIP(1)}
	seen := map[int]bool{}
	for range 20 {
		p, err := pp.pick(ips)
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
