package tenantfilter

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// Hub-side static identities (the hub's --token-auth-file, not the kube
// fixture's): the same names as the fixture's users, so the downstream's
// RBAC and the tenants' owners apply to them.
var hubUsers = map[string]string{"alice": "alice-hub-token", "bob": "bob-hub-token", "mallory": "mallory-hub-token"}

const downstreamName = "shared"

// hubProc is a real wharf-hub loading only the tenant-filter plugin, with
// --provider-config naming the fixture as downstream "shared".
type hubProc struct {
	URL, dataDir, adminToken string
	CA                       []byte
	cmd                      *exec.Cmd
	log                      *testutil.Buffer
	exited                   chan struct{}
}

func hubBinaryPath(t testing.TB) string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{os.Getenv("WHARF_BIN_DIR"), filepath.Join(root, "bin")} {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "wharf-hub"); fileExists(p) {
			return p
		}
	}
	out := filepath.Join(t.TempDir(), "wharf-hub")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/wharf-hub")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build wharf-hub: %v\n%s", err, b)
	}
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// startHub starts the hub; downstreamKubeconfig is the provider's
// credential for downstream "shared".
func startHub(t *testing.T, downstreamKubeconfig string) *hubProc {
	t.Helper()
	dir := t.TempDir()
	h := &hubProc{dataDir: filepath.Join(dir, "data"), log: &testutil.Buffer{}, exited: make(chan struct{})}
	var tokens strings.Builder
	for u, tok := range hubUsers {
		g := capsuleGroup
		if u == "mallory" {
			g = "plain-group"
		}
		fmt.Fprintf(&tokens, "%s,%s,%s-uid,%q\n", tok, u, u, g)
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	plugins := filepath.Join(dir, "plugins")
	cfg := filepath.Join(dir, "tenant-filter.yaml")
	must(t, os.WriteFile(tokenFile, []byte(tokens.String()), 0o600))
	must(t, os.MkdirAll(plugins, 0o755))
	must(t, os.Symlink(proxyBinary(t), filepath.Join(plugins, proxyBinaryName)))
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf("clusters:\n- name: %s\n  kubeconfig: %s\n", downstreamName, downstreamKubeconfig)), 0o600))
	port := freePort(t)
	h.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	h.cmd = exec.Command(hubBinaryPath(t), "--data-dir", h.dataDir, "--secure-port", fmt.Sprint(port),
		"--bind-address", "127.0.0.1", "--token-auth-file", tokenFile, "--provider-dir", plugins,
		"--provider-config", "tenant-filter="+cfg)
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	must(t, h.cmd.Start())
	go func() { _ = h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(os.Interrupt)
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
		if t.Failed() {
			t.Logf("wharf-hub log:\n%s", testutil.Tail(h.log.String(), 120))
		}
	})
	eventually(t, 2*time.Minute, func() error {
		select {
		case <-h.exited:
			t.Fatalf("wharf-hub exited:\n%s", testutil.Tail(h.log.String(), 80))
		default:
		}
		ca, err := os.ReadFile(filepath.Join(h.dataDir, "pki", "serving.crt"))
		if err != nil {
			return err
		}
		h.CA = ca
		if code, body := h.do(hubUsers["alice"], "/api/v1/namespaces"); code != http.StatusOK {
			return fmt.Errorf("provider not serving yet: %d %s", code, body)
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(h.dataDir, "admin-token")); err == nil {
		h.adminToken = strings.TrimSpace(string(b))
	}
	return h
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// base is the downstream's URL through the hub.
func (h *hubProc) base() string {
	return h.URL + "/services/providers/tenant-filter/clusters/" + downstreamName
}

func (h *hubProc) do(token, path string) (int, string) {
	return h.doURL(token, h.base()+path)
}

func (h *hubProc) doURL(token, u string) (int, string) { return h.doHeader(token, u, nil) }

func (h *hubProc) doHeader(token, u string, hdr http.Header) (int, string) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.CA)
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if token == h.adminToken {
		// The admin has no home workspace; name one.
		req.Header.Set("X-Wharf-Workspace", "root")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestThroughHub: the same filtering in plugin mode, through a real hub,
// with the hub's static-token users and the real kubectl.
func TestThroughHub(t *testing.T) {
	wind := createTenant(t, newTenant(uniq("hwind"), userOwner("alice")))
	solar := createTenant(t, newTenant(uniq("hsolar"), userOwner("bob")))
	a, b := uniq("hwind-a"), uniq("hsolar-a")
	createTenantNamespace(t, wind, a, linkCapsule)
	createTenantNamespace(t, solar, b, linkCapsule)
	rec, kc := startRecorder(t)
	h := startHub(t, kc)

	for _, tc := range []struct{ user, mine, not string }{{"alice", a, b}, {"bob", b, a}} {
		kc := fx.WriteKubeconfig(t, uniq("hub-"+tc.user), &rest.Config{Host: h.base(), BearerToken: hubUsers[tc.user],
			TLSClientConfig: rest.TLSClientConfig{CAData: h.CA}})
		eventually(t, time.Minute, func() error {
			out, err := runKubectl(t, kc, "get", "namespaces", "-o", "name")
			if err != nil {
				return err
			}
			got := kubectlNames(out)
			if want := visibleNamespaces(t, tc.user); !slices.Equal(got, want) {
				return fmt.Errorf("%s through the hub: %v, want %v", tc.user, got, want)
			}
			if !slices.Contains(got, tc.mine) || slices.Contains(got, tc.not) {
				return fmt.Errorf("%s through the hub: %v (want %s, not %s)", tc.user, got, tc.mine, tc.not)
			}
			return nil
		})
		if _, err := runKubectl(t, kc, "get", "namespace", tc.not); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Fatalf("%s get ns %s through the hub: %v, want NotFound", tc.user, tc.not, err)
		}
	}
	// What reached the downstream for the hub's users: the provider's
	// credential, never the caller's hub token, and no X-Kedge-* headers.
	adminToken := fx.Config().BearerToken
	for _, r := range rec.requests("/api/v1/namespaces") {
		if a := r.Header.Get("Authorization"); a != "Bearer "+adminToken {
			t.Fatalf("%s forwarded with a credential that is not the provider's", r.Path)
		}
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-kedge-") {
				t.Fatalf("%s forwarded %s downstream", r.Path, k)
			}
		}
	}
	code, _ := h.doHeader(hubUsers["alice"], h.base()+"/api/v1/namespaces/kube-system/configmaps",
		http.Header{"Impersonate-User": {"system:admin"}, "Impersonate-Group": {"system:masters"}})
	if code != http.StatusForbidden {
		t.Fatalf("alice impersonating system:masters through the hub: %d, want 403", code)
	}
	// A caller who is no tenant user gets the downstream's own answer.
	if code, body := h.do(hubUsers["mallory"], "/api/v1/namespaces"); code != http.StatusForbidden {
		t.Fatalf("mallory through the hub: %d, want 403: %s", code, body)
	}
	// An unknown downstream is a 404 Status.
	code, body := h.doURL(hubUsers["alice"], h.URL+"/services/providers/tenant-filter/clusters/nope/api/v1/namespaces")
	if code != http.StatusNotFound || !strings.Contains(body, `"kind":"Status"`) {
		t.Fatalf("unknown downstream: %d %s", code, body)
	}
	// Plugin mode populates the metrics too (readable by system:masters).
	if h.adminToken != "" {
		code, body := h.doURL(h.adminToken, h.URL+"/services/providers/tenant-filter/metrics")
		if code != http.StatusOK || !strings.Contains(body, `wharf_tenant_filter_requests_total{path="/api/v1/namespaces",status="200"}`) ||
			!strings.Contains(body, `wharf_tenant_filter_response_time_seconds_count{path="/api/v1/namespaces/{name}"}`) {
			t.Fatalf("plugin metrics: %d\n%.600s", code, body)
		}
	}
}
