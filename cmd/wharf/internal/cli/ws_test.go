package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestWorkspaceOf(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{"https://h:9443", "root"},
		{"https://h:9443/", "root"},
		{"https://h:9443/clusters/root:acme", "root:acme"},
		{"https://h:9443/prefix/clusters/0123456789abcdef/", "0123456789abcdef"},
	} {
		got, err := workspaceOf(tc.server)
		if err != nil || got != tc.want {
			t.Errorf("workspaceOf(%q) = %q, %v; want %q", tc.server, got, err, tc.want)
		}
	}
	if _, err := workspaceOf("not a url"); err == nil {
		t.Error("workspaceOf accepted a non-URL")
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		name, cur, arg string
		want           wsTarget
		err            string
	}{
		{"absolute", "root:a", "root:b:c", wsTarget{path: "root:b:c"}, ""},
		{"root", "root:a", "root", wsTarget{path: "root"}, ""},
		{"child", "root:a", "team", wsTarget{path: "root:a:team"}, ""},
		{"grandchild", "root:a", "team:x", wsTarget{path: "root:a:team:x"}, ""},
		{"parent", "root:a:b", "..", wsTarget{path: "root:a"}, ""},
		{"parent of root", "root", "..", wsTarget{}, "no parent"},
		{"previous", "root:a", "-", wsTarget{previous: true}, ""},
		{"home", "root:a", "~", wsTarget{home: true}, ""},
		{"id or child", "root:a", "0123456789abcdef", wsTarget{path: "root:a:0123456789abcdef", id: "0123456789abcdef"}, ""},
		{"id under an id", "0123456789abcdef", "abcdefghij012345", wsTarget{id: "abcdefghij012345"}, ""},
		{"name under an id", "0123456789abcdef", "team", wsTarget{}, "cluster id"},
		{"bad segment", "root", "root:A", wsTarget{path: "root:A"}, "invalid workspace path"},
		{"slash", "root", "a/b", wsTarget{}, "invalid workspace path"},
		{"query", "root", "root:a?x=1", wsTarget{path: "root:a?x=1"}, "invalid workspace path"},
		{"percent", "root", "%2e%2e", wsTarget{}, "invalid workspace path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTarget(tc.cur, tc.arg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseTarget(%q, %q) error = %v, want %q", tc.cur, tc.arg, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseTarget(%q, %q) = %+v, %v; want %+v", tc.cur, tc.arg, got, err, tc.want)
			}
		})
	}
}

func TestWriteTree(t *testing.T) {
	var b bytes.Buffer
	writeTree(&b, []string{"root:users:alice", "root:acme", "root:acme:team-b", "root:acme:team-a"}, "root:acme:team-a")
	want := `.
└── root
    ├── acme
    │   ├── team-a (current)
    │   └── team-b
    └── users
        └── alice
`
	if b.String() != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestSetServerRemembersPrevious rewrites a kubeconfig file twice and
// checks that the previous workspace is kept for the same hub and user,
// and that a previous context of another hub is not followed.
func TestSetServerRemembersPrevious(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: "https://h:9443/clusters/root:a", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["alice"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "alice"}
	cfg.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	load := func() *wsKubeconfig {
		k, err := loadKubeconfig(hubFlags{kubeconfig: path})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if _, err := load().previousServer(); err == nil {
		t.Fatal("a fresh kubeconfig has a previous workspace")
	}
	if err := load().setServer("https://h:9443/clusters/root:b"); err != nil {
		t.Fatal(err)
	}
	k := load()
	if got := k.cfg.Clusters["hub"].Server; got != "https://h:9443/clusters/root:b" {
		t.Fatalf("server = %q", got)
	}
	prev, err := k.previousServer()
	if err != nil || prev != "https://h:9443/clusters/root:a" {
		t.Fatalf("previous = %q, %v", prev, err)
	}
	if string(k.cfg.Clusters[previousName].CertificateAuthorityData) != "ca" {
		t.Fatal("the previous context lost the CA")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("kubeconfig mode %v, %v", fi.Mode(), err)
	}

	k.cfg.Clusters[previousName].Server = "https://other:9443/clusters/root"
	if err := clientcmd.ModifyConfig(k.rules, *k.cfg, true); err != nil {
		t.Fatal(err)
	}
	if _, err := load().previousServer(); err == nil || !strings.Contains(err.Error(), "another hub") {
		t.Fatalf("previous of another hub: %v", err)
	}
	if _, err := loadKubeconfig(hubFlags{kubeconfig: path, context: previousName}); err == nil {
		t.Fatal("ws accepted the previous context as current")
	}
}
