package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// TestProbeHasNoOtherWayIn runs the real hub with the real edges provider
// and this probe. In a workspace that enabled the probe, its grant gets it
// through the hub to the edges provider's egress (which then answers for
// the edge: 404 for a missing one, proving authorization passed); in a
// workspace that did not, it is refused; and the grant reaches nothing
// else: no Edge objects, no Secrets, not even in the enabled workspace.
func TestProbeHasNoOtherWayIn(t *testing.T) {
	h := startHub(t)
	on := h.workspace("probe-on", "edges", "edgeprobe")
	off := h.workspace("probe-off", "edges")
	h.apply("root:probe-on", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\nstringData: {k: v}\n")

	// ask calls the probe as the admin, in the workspace that enabled it.
	ask := func(endpoint string, q url.Values) (int, string, string) {
		req, _ := http.NewRequest("GET", h.URL+"/services/providers/edgeprobe/"+endpoint+"?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+h.token)
		req.Header.Set("X-Wharf-Workspace", "root:probe-on")
		resp, err := h.client.Do(req)
		if err != nil {
			return 0, "", err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(HeaderUpstream), string(b)
	}
	edge := func(cluster, name string) url.Values {
		return url.Values{"cluster": {cluster}, "edge": {name}, "path": {"/api/v1/namespaces"}}
	}
	// The grant follows the binding through a watch.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, up, body := ask("probe", edge(on, "nosuch"))
		// The Status JSON, verbatim: its message's quotes are escaped.
		if code == http.StatusNotFound && up == "404" && strings.Contains(body, `edges.edges.wharf.dev \"nosuch\" not found`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe into its own workspace's missing edge: %d (upstream %s) %s", code, up, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, tc := range []struct {
		what     string
		endpoint string
		q        url.Values
	}{
		{"an edge of a workspace that did not enable it", "probe", edge(off, "nosuch")},
		{"Edge objects where enabled", "hub", url.Values{"cluster": {on}, "path": {"/apis/edges.wharf.dev/v1alpha1/edges"}}},
		{"Secrets where enabled", "hub", url.Values{"cluster": {on}, "path": {"/api/v1/namespaces/default/secrets/s"}}},
		{"Secrets elsewhere", "hub", url.Values{"cluster": {off}, "path": {"/api/v1/namespaces/default/secrets"}}},
	} {
		code, up, body := ask(tc.endpoint, tc.q)
		if code != http.StatusForbidden || up != "403" {
			t.Errorf("%s: %d (upstream %s) %s, want 403", tc.what, code, up, body)
		}
	}
}

type hub struct {
	t       *testing.T
	URL     string
	token   string
	kubecfg string
	data    string
	kubectl string
	client  *http.Client
}

func startHub(t *testing.T) *hub {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	provDir := filepath.Join(dir, "providers")
	if err := os.Mkdir(provDir, 0o700); err != nil {
		t.Fatal(err)
	}
	goBuild(t, root, "./cmd/wharf-provider-edges", filepath.Join(provDir, "wharf-provider-edges"))
	goBuild(t, root, "./test/e2e/edgeprobe", filepath.Join(provDir, "wharf-provider-edgeprobe"))
	hubBin := filepath.Join(root, "bin", "wharf-hub")
	if _, err := os.Stat(hubBin); err != nil {
		hubBin = filepath.Join(dir, "wharf-hub")
		goBuild(t, root, "./cmd/wharf-hub", hubBin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	cmd := exec.Command(hubBin, "--shutdown-delay=0", "--data-dir", data, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1", "--provider-dir", provDir)
	var log testutil.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("wharf-hub log:\n%s", log.String())
		}
	})
	h := &hub{t: t, URL: fmt.Sprintf("https://127.0.0.1:%d", port), kubecfg: filepath.Join(data, "admin.kubeconfig"), data: data, kubectl: kube.KubectlPath(t)}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("wharf-hub exited:\n%s", log.String())
		default:
		}
		tok, err := os.ReadFile(filepath.Join(data, "admin-token"))
		ca, cerr := os.ReadFile(filepath.Join(data, "pki", "serving.crt"))
		if err == nil && cerr == nil {
			h.token = strings.TrimSpace(string(tok))
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(ca)
			h.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			if out, err := h.run("root", "", "get", "--raw", "/readyz"); err == nil && out == "ok" {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("wharf-hub not ready:\n%s", log.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func goBuild(t *testing.T, root, pkg, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func (h *hub) run(ws, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.kubectl, append([]string{"--kubeconfig", h.kubecfg, "--server", h.URL + "/clusters/" + ws}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(h.data, "kubecache"))
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (h *hub) apply(ws, manifest string) {
	h.t.Helper()
	if out, err := h.run(ws, manifest, "apply", "-f", "-"); err != nil {
		h.t.Fatalf("apply in %s: %v\n%s", ws, err, out)
	}
}

// workspace creates root:<name>, enables providers there and returns the
// logical cluster id.
func (h *hub) workspace(name string, providers ...string) string {
	h.t.Helper()
	h.apply("root", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: "+name+"\n")
	var id string
	deadline := time.Now().Add(time.Minute)
	for {
		id, _ = h.run("root", "", "get", "workspace", name, "-o", "jsonpath={.status.cluster}")
		if len(id) == 16 && !strings.ContainsAny(id, " \n") {
			break
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("workspace %s has no cluster: %s", name, id)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, p := range providers {
		h.apply("root:"+name, "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: "+p+"\nspec:\n  provider: "+p+"\n")
	}
	return id
}
