package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/home"
)

type whoami struct {
	Identity struct {
		User    string
		Groups  []string
		Tenant  string
		Cluster string
	}
	Authenticated bool
	Authorization string
}

// TestProviderBackendProxy runs the hub with a real provider plugin and
// checks the identity contract of /services/providers/<name>/.
func TestProviderBackendProxy(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"devs\"\nbob-token,bob,bob-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens, "--provider", "example=" + exampleProvider(t)}})
	id := h.createWorkspace("root", "prov")
	h.mustKubectl("root:prov", "create", "clusterrolebinding", "alice-view", "--clusterrole=view", "--user=alice")

	get := func(token, path string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, h.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			if k == "Cookie" {
				req.AddCookie(&http.Cookie{Name: "__Host-wharf_workspace", Value: v})
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := h.client().Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, readAll(resp))
		return resp.StatusCode, b.String()
	}
	// The plugin starts after the hub is ready; wait for it.
	eventually(t, 60*time.Second, func() error {
		if code, body := get(h.Token, "/services/providers/example/whoami", map[string]string{"X-Wharf-Workspace": "root"}); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})

	spoof := map[string]string{"X-Kedge-User": "mallory", "x-kedge-groups": "system:masters", "X-Wharf-Workspace": "root:prov"}
	code, body := get("alice-token", "/services/providers/example/whoami", spoof)
	if code != http.StatusOK {
		t.Fatalf("alice whoami = %d %s", code, body)
	}
	var w whoami
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		t.Fatal(err)
	}
	if w.Identity.User != "alice" || w.Identity.Tenant != "root:prov" || w.Identity.Cluster != id || w.Authorization != "Bearer alice-token" {
		t.Errorf("provider saw %+v", w)
	}
	for _, g := range w.Identity.Groups {
		if g == "system:masters" {
			t.Errorf("spoofed group reached the provider: %v", w.Identity.Groups)
		}
	}
	// Without a header the cookie selects the workspace, and without either
	// the caller's home; the header wins over the cookie.
	alicesHome := string(home.PathOf("alice"))
	for _, tc := range []struct {
		hdr    map[string]string
		tenant string
	}{
		{nil, alicesHome},
		{map[string]string{"Cookie": "root:prov"}, "root:prov"},
		{map[string]string{"Cookie": "root:prov", "X-Wharf-Workspace": alicesHome}, alicesHome},
		{map[string]string{"Cookie": alicesHome, "X-Wharf-Workspace": "root:prov"}, "root:prov"},
	} {
		code, body := get("alice-token", "/services/providers/example/whoami", tc.hdr)
		var w whoami
		if code != http.StatusOK || json.Unmarshal([]byte(body), &w) != nil {
			t.Fatalf("alice whoami with %v = %d %s", tc.hdr, code, body)
		}
		if w.Identity.Tenant != tc.tenant || w.Identity.Cluster == "" || w.Identity.User != "alice" {
			t.Errorf("alice whoami with %v: provider saw %+v, want tenant %s", tc.hdr, w.Identity, tc.tenant)
		}
	}
	// The hub admin has no home: without a workspace the request is bad.
	if code, body := get(h.Token, "/services/providers/example/whoami", nil); code != http.StatusBadRequest || !strings.Contains(body, "no workspace selected") {
		t.Errorf("admin without a workspace = %d %s", code, body)
	}
	// bob has no access to root:prov; unknown workspaces look the same.
	for _, ws := range []string{"root:prov", id, "root:nope"} {
		if code, body := get("bob-token", "/services/providers/example/whoami", map[string]string{"X-Wharf-Workspace": ws}); code != http.StatusForbidden {
			t.Errorf("bob in %s = %d %s", ws, code, body)
		}
	}
	// bob's refused requests were authenticated, so they created his home,
	// where he works by default.
	if code, body := get("bob-token", "/services/providers/example/whoami", nil); code != http.StatusOK || !strings.Contains(body, `"Tenant":"`+string(home.PathOf("bob"))+`"`) {
		t.Errorf("bob without a workspace = %d %s", code, body)
	}
	if code, _ := get("", "/services/providers/example/whoami", nil); code != http.StatusUnauthorized {
		t.Errorf("anonymous = %d", code)
	}
	// Public paths need no token and carry no identity, spoofed or not.
	code, body = get("", "/services/providers/example/public/ping", map[string]string{"X-Kedge-User": "mallory"})
	if code != http.StatusOK || strings.Contains(body, "mallory") {
		t.Errorf("public ping = %d %s", code, body)
	}
	if code, _ := get(h.Token, "/services/providers/nope/whoami", nil); code != http.StatusNotFound {
		t.Errorf("unknown provider = %d", code)
	}
	// The host's view of the plugin is exported.
	eventually(t, 30*time.Second, func() error {
		if _, body, _ := h.get("/metrics"); !strings.Contains(body, `wharf_provider_up{provider="example"} 1`) {
			return fmt.Errorf("metrics lack wharf_provider_up for example")
		}
		return nil
	})
	// UI assets are served with a base path and cache headers.
	code, body = get("", "/ui/providers/example/app.js", nil)
	if code != http.StatusOK || body == "" {
		t.Errorf("ui asset = %d %q", code, body)
	}
	// A client-side route is not an asset: the portal shell answers it, so
	// a reload keeps the portal chrome.
	code, body = get("", "/ui/providers/example/some/route", nil)
	if code != http.StatusOK || !strings.Contains(body, "<title>Wharf</title>") {
		t.Errorf("ui route = %d %q", code, body)
	}
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
