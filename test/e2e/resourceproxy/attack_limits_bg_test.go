package resourceproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackLimitsB8HiddenTarget (issue 24, B8): a ResourceProxy aimed at
// a workspace its client may not reach answered differently for an
// existing and a missing target, because the provider passed the target's
// 403 or 404 through: an existence oracle for every workspace of the hub.
// Now requests, discovery and status answer the same for a target that
// does not exist, one that exists and did not enable the provider, and
// one that enabled it and granted the client nothing.
func TestAttackLimitsB8HiddenTarget(t *testing.T) {
	h := startHub(t)
	h.mustK("", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"acme"}}`, "apply", "-f", "-")
	h.mustK("", "", "wait", "--for=condition=Ready", "workspace/acme", "--timeout=60s")
	h.mustK("root:acme", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"client"}}`, "apply", "-f", "-")
	h.mustK("root:acme", "", "wait", "--for=condition=Ready", "workspace/client", "--timeout=60s")
	const client = "root:acme:client"
	h.mustK(client, `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
	h.mustK("", hubCRD, "apply", "-f", "-")
	h.mustK(client, "", "create", "clusterrole", "rp-namespaces", "--verb=get", "--resource=namespaces")
	h.mustK(client, "", "create", "clusterrolebinding", "rp-namespaces", "--clusterrole=rp-namespaces", "--user=system:wharf:provider:resource-proxy")
	h.mustK(client, strings.ReplaceAll(proxyYAML, "root:acme:platform", "root:acme:ghost"), "apply", "-f", "-")
	eventually(t, "APIService in the client", func() error {
		out, err := h.k(client, "", "get", "apiservice", "v1.databases.example.com", "-o", "name")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	dir := filepath.Dir(h.kubecfg)
	pem, err := os.ReadFile(filepath.Join(dir, "pki", "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(method, path, body string) string {
		req, _ := http.NewRequest(method, h.url+"/clusters/"+client+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Accept", "application/json")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	const dbs = "/apis/databases.example.com/v1/namespaces/default/databases"
	answers := func() map[string]string {
		return map[string]string{
			"list":      do(http.MethodGet, dbs, ""),
			"get":       do(http.MethodGet, dbs+"/x", ""),
			"create":    do(http.MethodPost, dbs, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"x"}}`),
			"patch":     do(http.MethodPatch, dbs+"/x", ""),
			"delete":    do(http.MethodDelete, dbs+"/x", ""),
			"discovery": do(http.MethodGet, "/apis/databases.example.com/v1", ""),
			"ready": h.mustK(client, "", "get", "resourceproxy", "databases", "-o",
				`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason} {.status.conditions[?(@.type=="Ready")].message}`),
		}
	}
	// settled answers once the proxy's reconcile is past a transient
	// failure to write its APIServices (a conflict it retries), which
	// says nothing of its target.
	settled := func(what string) map[string]string {
		t.Helper()
		var got map[string]string
		eventually(t, what+": the proxy's APIServices written", func() error {
			got = answers()
			if strings.Contains(got["ready"], "APIServiceError") {
				return fmt.Errorf("ready: %s", got["ready"])
			}
			return nil
		})
		return got
	}
	missing := settled("a missing target")
	if !strings.HasPrefix(missing["list"], "404 ") || !strings.Contains(missing["list"], `workspaces.tenancy.wharf.dev \"root:acme:ghost\" not found`) {
		t.Errorf("list through a proxy to a missing workspace: %s; want the hub's 404 for a missing workspace", missing["list"])
	}

	compare := func(what string) {
		t.Helper()
		got := settled(what)
		for k, want := range missing {
			if got[k] != want {
				t.Errorf("%s: %s answered\n  %s\nwhere a missing target answers\n  %s", what, k, got[k], want)
			}
		}
	}
	// It exists (created by the hub admin, who alone may) and did not
	// enable the provider.
	h.mustK("root:acme", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"ghost"}}`, "apply", "-f", "-")
	h.mustK("root:acme", "", "wait", "--for=condition=Ready", "workspace/ghost", "--timeout=60s")
	compare("a target that exists and did not enable the provider")
	// It enabled the provider and granted the client nothing.
	h.mustK("root:acme:ghost", `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
	eventually(t, "provider enabled in the target", func() error {
		out, err := h.k("root:acme:ghost", "", "get", "providerbinding", "resource-proxy", "-o", "name")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	compare("a target that enabled the provider and granted the client nothing")
}
