package ws

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/testutil"
)

var currentRE = regexp.MustCompile(`^Current workspace is "([^"]+)"\.\n$`)

// current is the workspace `wharf ws` prints.
func current(t *testing.T, p *person) string {
	t.Helper()
	out := p.mustWS(t)
	m := currentRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("wharf ws printed %q, want kcp's `Current workspace is \"<path>\".`", out)
	}
	return m[1]
}

// expectAt checks that `wharf ws` and the kubeconfig both say path, and
// that kubectl with the kubeconfig as written works there and sees the
// marker ConfigMap only that workspace holds.
func expectAt(t *testing.T, p *person, path, marker string) {
	t.Helper()
	if got := current(t, p); got != path {
		t.Fatalf("current workspace %q, want %q", got, path)
	}
	if s := p.server(t); !strings.HasSuffix(s, "/clusters/"+path) {
		t.Fatalf("kubeconfig server %q, want .../clusters/%s", s, path)
	}
	if marker == "" {
		return
	}
	out, errOut, code := p.kubectl(t, "get", "configmap", marker, "-o", "jsonpath={.data.ws}")
	if code != 0 || out != path {
		t.Fatalf("kubectl in %s: exit %d, %q %s", path, code, out, errOut)
	}
}

func TestWS(t *testing.T) {
	h, alice, bob := startHub(t)

	home := current(t, alice)
	if !strings.HasPrefix(home, "root:users:alice-") {
		t.Fatalf("alice starts in %q, want her home root:users:alice-…", home)
	}
	mark := func(p *person, ws string) {
		t.Helper()
		if out, errOut, code := p.kubectl(t, "create", "configmap", "here", "--from-literal=ws="+ws); code != 0 {
			t.Fatalf("kubectl create configmap in %s: %d %s%s", ws, code, out, errOut)
		}
	}
	mark(alice, home)

	// create --enter: created, waited for, and made current.
	out := alice.mustWS(t, "create", "team-a", "--enter")
	teamA := home + ":team-a"
	for _, want := range []string{`Workspace "team-a" created.`, `Workspace "team-a" is ready to use.`, fmt.Sprintf("Current workspace is %q.", teamA)} {
		if !strings.Contains(out, want) {
			t.Fatalf("ws create --enter printed:\n%s\nwant a line %q", out, want)
		}
	}
	expectAt(t, alice, teamA, "")
	mark(alice, teamA)

	t.Run("use ..", func(t *testing.T) {
		alice.mustWS(t, "use", "..")
		expectAt(t, alice, home, "here")
	})
	t.Run("create without --enter stays", func(t *testing.T) {
		alice.mustWS(t, "create", "team-b")
		expectAt(t, alice, home, "here")
	})
	t.Run("use a child by name", func(t *testing.T) {
		testutil.Eventually(t, time.Minute, func() error {
			if _, errOut, code := alice.ws(t, "use", "team-b"); code != 0 {
				return fmt.Errorf("exit %d: %s", code, errOut)
			}
			return nil
		})
		expectAt(t, alice, home+":team-b", "")
	})
	t.Run("use - goes back and forth", func(t *testing.T) {
		alice.mustWS(t, "use", "-")
		expectAt(t, alice, home, "here")
		alice.mustWS(t, "use", "-")
		expectAt(t, alice, home+":team-b", "")
	})
	t.Run("use by absolute path", func(t *testing.T) {
		alice.mustWS(t, "use", teamA)
		expectAt(t, alice, teamA, "here")
	})
	t.Run("use by id", func(t *testing.T) {
		alice.mustWS(t, "use", home)
		id := strings.TrimSpace(admin(t, h, home, "", "get", "workspace", "team-a", "-o", "jsonpath={.status.cluster}"))
		if len(id) != 16 {
			t.Fatalf("cluster id %q", id)
		}
		if out := alice.mustWS(t, "use", id); out != fmt.Sprintf("Current workspace is %q.\n", teamA) {
			t.Fatalf("use <id> printed %q", out)
		}
		// The kubeconfig names the path, as kcp's does, not the id.
		expectAt(t, alice, teamA, "here")
	})
	t.Run("use ~", func(t *testing.T) {
		alice.mustWS(t, "use", "~")
		expectAt(t, alice, home, "here")
	})
	t.Run("tree", func(t *testing.T) {
		admin(t, h, "root", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"acme"}}`, "create", "-f", "-")
		tree := alice.mustWS(t, "tree")
		label := strings.TrimPrefix(home, "root:users:")
		want := fmt.Sprintf(".\n└── root\n    └── users\n        └── %s (current)\n            ├── team-a\n            └── team-b\n", label)
		if tree != want {
			t.Fatalf("alice's tree:\n%s\nwant:\n%s", tree, want)
		}
		if strings.Contains(tree, "acme") || strings.Contains(tree, "bob") {
			t.Fatalf("alice's tree shows workspaces that are not hers:\n%s", tree)
		}
	})
	t.Run("errors", func(t *testing.T) {
		bobHome := current(t, bob)
		bobID := strings.TrimSpace(admin(t, h, "root:users", "", "get", "workspace", strings.TrimPrefix(bobHome, "root:users:"), "-o", "jsonpath={.status.cluster}"))
		before := alice.server(t)
		// Existing but not alice's, and missing: one message, the name
		// alone differing, and the kubeconfig left alone.
		for _, tc := range []struct{ arg, name string }{
			{"root:acme", "root:acme"},
			{"root:nope", "root:nope"},
			{bobHome, bobHome},
			{bobID, bobID},
			{"zzzzzzzzzzzzzzzz", "zzzzzzzzzzzzzzzz"},
			{"..", "root:users"},
			{"missing", home + ":missing"},
		} {
			out, errOut, code := alice.ws(t, "use", tc.arg)
			want := fmt.Sprintf("wharf: workspace %q not found, or you may not access it\n", tc.name)
			if code == 0 || out != "" || errOut != want {
				t.Errorf("ws use %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.arg, code, out, errOut, want)
			}
			if s := alice.server(t); s != before {
				t.Fatalf("a refused ws use %s changed the kubeconfig to %s", tc.arg, s)
			}
		}
		if _, errOut, code := alice.ws(t, "delete", "missing"); code == 0 || errOut != fmt.Sprintf("wharf: workspace %q not found, or you may not access it\n", home+":missing") {
			t.Errorf("ws delete missing: exit %d, %q", code, errOut)
		}
		if _, errOut, code := alice.ws(t, "create", "team-a"); code == 0 || !strings.Contains(errOut, "AlreadyExists") {
			t.Errorf("ws create of an existing workspace: exit %d, %q", code, errOut)
		}
		if _, errOut, code := alice.ws(t, "create", "Bad_Name"); code == 0 || !strings.Contains(errOut, "invalid workspace name") {
			t.Errorf("ws create Bad_Name: exit %d, %q", code, errOut)
		}
		if _, errOut, code := alice.ws(t, "create", "x", "--type", "root:organization"); code == 0 || !strings.Contains(errOut, "not served") {
			t.Errorf("ws create --type root:organization: exit %d, %q", code, errOut)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if out := alice.mustWS(t, "delete", "team-b"); out != "Workspace \"team-b\" deleted.\n" {
			t.Fatalf("ws delete printed %q", out)
		}
		testutil.Eventually(t, 2*time.Minute, func() error {
			_, errOut, code := alice.ws(t, "use", "team-b")
			if code == 0 {
				alice.mustWS(t, "use", home)
				return fmt.Errorf("team-b still usable")
			}
			if !strings.Contains(errOut, "not found, or you may not access it") {
				return fmt.Errorf("ws use team-b after delete: %s", errOut)
			}
			return nil
		})
	})
}
