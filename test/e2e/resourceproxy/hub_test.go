package resourceproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// hub is a real wharf-hub process (from ./bin, make build) loading the
// real resource-proxy plugin.
type hub struct {
	t       *testing.T
	url     string
	kubecfg string
	kubectl string
	log     *testutil.Buffer
}

func binPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: run make build first: %v", name, err)
	}
	return p
}

// startHub starts the hub with the resource-proxy plugin; args are added
// to its command line (loopbackTargets for external targets on loopback).
func startHub(t *testing.T, args ...string) *hub {
	t.Helper()
	dir := t.TempDir()
	port := testutil.FreePort(t)
	h := &hub{t: t, url: fmt.Sprintf("https://127.0.0.1:%d", port), kubecfg: filepath.Join(dir, "admin.kubeconfig"), kubectl: kube.KubectlPath(t), log: &testutil.Buffer{}}
	cmd := exec.Command(binPath(t, "wharf-hub"), append([]string{"--shutdown-delay=0", "--data-dir", dir, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1",
		"--provider", "resource-proxy=" + binPath(t, "wharf-provider-resource-proxy")}, args...)...)
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("wharf-hub log:\n%s", h.log.String())
		}
	})
	eventually(t, "hub ready", func() error {
		select {
		case <-done:
			return fmt.Errorf("hub exited: %s", h.log.String())
		default:
		}
		pem, err := os.ReadFile(filepath.Join(dir, "pki", "serving.crt"))
		if err != nil {
			return err
		}
		tok, err := os.ReadFile(filepath.Join(dir, "admin-token"))
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		req, _ := http.NewRequest(http.MethodGet, h.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	return h
}

// providerConfig writes the resource-proxy provider config yaml and
// returns the hub flag handing it over.
func providerConfig(t *testing.T, yaml string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "resource-proxy.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--provider-config", "resource-proxy=" + p}
}

// loopbackTargets is the operator's allowance for external targets on
// loopback (the kube fixture, in-test servers), which the provider's
// built-in target policy refuses.
func loopbackTargets(t *testing.T) []string {
	return providerConfig(t, "targetPolicy:\n  allowCIDRs: [\"127.0.0.0/8\", \"::1/128\"]\n")
}

// metrics reads the provider's /metrics through the backend proxy as the
// hub admin (system:masters).
func (h *hub) metrics(ws string) string {
	h.t.Helper()
	dir := filepath.Dir(h.kubecfg)
	pem, _ := os.ReadFile(filepath.Join(dir, "pki", "serving.crt"))
	tok, _ := os.ReadFile(filepath.Join(dir, "admin-token"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	req, _ := http.NewRequest(http.MethodGet, h.url+"/services/providers/resource-proxy/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("X-Wharf-Workspace", ws)
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		h.t.Fatalf("metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// k runs kubectl against workspace ws ("" for root) as the hub admin.
func (h *hub) k(ws string, stdin string, args ...string) (string, error) {
	server := h.url
	if ws != "" {
		server += "/clusters/" + ws
	}
	cmd := exec.Command(h.kubectl, append([]string{"--kubeconfig", h.kubecfg, "--server", server}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *hub) mustK(ws, stdin string, args ...string) string {
	h.t.Helper()
	var out string
	eventually(h.t, "kubectl "+strings.Join(args, " ")+" in "+ws, func() error {
		var err error
		out, err = h.k(ws, stdin, args...)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	return out
}

const hubCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: databases.databases.example.com}
spec:
  group: databases.example.com
  names: {plural: databases, singular: database, kind: Database}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`

const proxyYAML = `apiVersion: proxy.wharf.dev/v1alpha1
kind: ResourceProxy
metadata: {name: databases}
spec:
  target: {workspace: root:acme:platform}
  resources: [{group: databases.example.com, version: v1, resource: databases}]
`

// TestWorkspaceTarget is the README walk-through against a real hub and
// the real plugin: two client workspaces, one workspace target, each team
// sees its own object, the target sees both; kubectl api-resources in a
// client; deletion protection; deleting the ResourceProxy removes the
// APIService.
func TestWorkspaceTarget(t *testing.T) {
	h := startHub(t)
	h.mustK("", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"acme"}}`, "apply", "-f", "-")
	h.mustK("", "", "wait", "--for=condition=Ready", "workspace/acme", "--timeout=60s")
	for _, ws := range []string{"platform", "team-a", "team-b"} {
		h.mustK("root:acme", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"`+ws+`"}}`, "apply", "-f", "-")
		h.mustK("root:acme", "", "wait", "--for=condition=Ready", "workspace/"+ws, "--timeout=60s")
		h.mustK("root:acme:"+ws, `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
	}
	h.mustK("", hubCRD, "apply", "-f", "-")
	h.mustK("root:acme:platform", "", "create", "clusterrole", "db-user", "--verb=*", "--resource=databases.databases.example.com")
	h.mustK("root:acme:platform", "", "create", "clusterrole", "ns-create", "--verb=create", "--resource=namespaces")
	for _, team := range []string{"team-a", "team-b"} {
		ws := "root:acme:" + team
		h.mustK("root:acme:platform", "", "create", "clusterrolebinding", "db-"+team, "--clusterrole=db-user", "--user=wharf:workspace:"+ws)
		h.mustK("root:acme:platform", "", "create", "clusterrolebinding", "ns-"+team, "--clusterrole=ns-create", "--user=wharf:workspace:"+ws)
		h.mustK(ws, "", "create", "clusterrole", "rp-namespaces", "--verb=get", "--resource=namespaces")
		h.mustK(ws, "", "create", "clusterrolebinding", "rp-namespaces", "--clusterrole=rp-namespaces", "--user=system:wharf:provider:resource-proxy")
		h.mustK(ws, proxyYAML, "apply", "-f", "-")
	}
	for _, team := range []string{"team-a", "team-b"} {
		ws := "root:acme:" + team
		eventually(t, "APIService in "+team, func() error {
			out, err := h.k(ws, "", "get", "apiservice", "v1.databases.example.com", "-o", "jsonpath={.metadata.labels.wharf\\.dev/protected} {.spec.service.name}")
			if err != nil || out != "resource-proxy resource-proxy" {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		eventually(t, "ResourceProxy Ready in "+team, func() error {
			out, err := h.k(ws, "", "get", "resourceproxy", "databases", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			if err != nil || out != "True" {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		h.mustK(ws, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"`+team+`-db","namespace":"default"},"spec":{"size":1}}`, "create", "-f", "-")
	}
	for _, c := range []struct{ ws, want string }{
		{"root:acme:team-a", "team-a-db"},
		{"root:acme:team-b", "team-b-db"},
		{"root:acme:platform", "team-a-db team-b-db"},
	} {
		out := h.mustK(c.ws, "", "get", "databases", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}")
		if out != c.want {
			t.Errorf("%s sees %q, want %q", c.ws, out, c.want)
		}
	}
	if out, err := h.k("root:acme:team-b", "", "get", "database", "team-a-db", "-n", "default"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("team-b get team-a-db: %v %s", err, out)
	}
	out := h.mustK("root:acme:platform", "", "get", "databases", "-n", "default", "-o", "jsonpath={.items[*].metadata.labels.proxy\\.wharf\\.dev/owner-workspace}")
	if out != "team-a team-b" {
		t.Errorf("owner labels on the target: %q", out)
	}
	if out := h.mustK("root:acme:team-a", "", "api-resources", "--api-group=databases.example.com", "--no-headers"); !strings.Contains(out, "databases") {
		t.Errorf("api-resources in team-a: %s", out)
	}
	// What the README walk-through shows.
	for _, c := range []struct {
		ws   string
		args []string
	}{
		{"root:acme:team-a", []string{"get", "resourceproxies"}},
		{"root:acme:team-a", []string{"get", "apiservices"}},
		{"root:acme:team-a", []string{"get", "databases"}},
		{"root:acme:team-b", []string{"get", "databases"}},
		{"root:acme:team-b", []string{"get", "database", "team-a-db"}},
		{"root:acme:platform", []string{"get", "databases", "-L", "proxy.wharf.dev/owner-workspace"}},
		{"root:acme:team-a", []string{"delete", "apiservice", "v1.databases.example.com"}},
	} {
		out, _ := h.k(c.ws, "", c.args...)
		t.Logf("kubectl --server $H/clusters/%s %s\n%s", c.ws, strings.Join(c.args, " "), out)
	}
	// Mutual proxying: platform routes queues.example.com to team-a, the
	// other direction of the same pair.
	h.mustK("", strings.ReplaceAll(strings.ReplaceAll(hubCRD, "databases", "queues"), "Database", "Queue"), "apply", "-f", "-")
	h.mustK("root:acme:team-a", "", "create", "clusterrole", "queue-user", "--verb=*", "--resource=queues.queues.example.com")
	h.mustK("root:acme:team-a", "", "create", "clusterrolebinding", "queue-platform", "--clusterrole=queue-user", "--user=wharf:workspace:root:acme:platform")
	h.mustK("root:acme:platform", "", "create", "clusterrole", "rp-namespaces", "--verb=get", "--resource=namespaces")
	h.mustK("root:acme:platform", "", "create", "clusterrolebinding", "rp-namespaces", "--clusterrole=rp-namespaces", "--user=system:wharf:provider:resource-proxy")
	h.mustK("root:acme:platform", strings.ReplaceAll(strings.ReplaceAll(proxyYAML, "root:acme:platform", "root:acme:team-a"), "databases", "queues"), "apply", "-f", "-")
	eventually(t, "APIService in platform", func() error {
		_, err := h.k("root:acme:platform", "", "get", "apiservice", "v1.queues.example.com")
		return err
	})
	h.mustK("root:acme:platform", `{"apiVersion":"queues.example.com/v1","kind":"Queue","metadata":{"name":"platform-q","namespace":"default"}}`, "create", "-f", "-")
	if out := h.mustK("root:acme:team-a", "", "get", "queues", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}"); out != "platform-q" {
		t.Errorf("team-a (the target of queues) sees %q", out)
	}
	if out := h.mustK("root:acme:platform", "", "get", "queues", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}"); out != "platform-q" {
		t.Errorf("platform (the client of queues) sees %q", out)
	}
	metrics := h.metrics("root:acme:platform")
	for _, want := range []string{
		`wharf_resource_proxy_requests_total{code="201",group_version="databases.example.com/v1",reason="upstream",target="root:acme:platform",verb="create"} 2`,
		`wharf_resource_proxy_requests_total{code="201",group_version="queues.example.com/v1",reason="upstream",target="root:acme:team-a",verb="create"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	out, err := h.k("root:acme:team-a", "", "delete", "apiservice", "v1.databases.example.com")
	if err == nil || !strings.Contains(out, "ResourceProxy") {
		t.Errorf("deleting the APIService: %v %s", err, out)
	}
	h.mustK("root:acme:team-b", "", "delete", "resourceproxy", "databases", "--timeout=60s")
	eventually(t, "APIService gone with the ResourceProxy", func() error {
		out, err := h.k("root:acme:team-b", "", "get", "apiservice", "v1.databases.example.com")
		if err == nil || !strings.Contains(out, "NotFound") {
			return fmt.Errorf("still there: %v %s", err, out)
		}
		return nil
	})
}
