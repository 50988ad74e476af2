package resourceproxy

import (
	"fmt"
	"strings"
	"testing"
)

// TestExternalTargetThroughHub: a client workspace of a real hub proxies
// to the two-replica kube fixture through a kubeconfig Secret. The Secret
// is unreadable until the workspace admin grants it (status says so);
// the CRD exists only on the external cluster; with both replicas down
// kubectl api-resources still works while requests answer the 503.
func TestExternalTargetThroughHub(t *testing.T) {
	c := startKube(t)
	h := startHub(t, loopbackTargets(t)...)
	ws := teamA.path
	h.mustK("", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"acme"}}`, "apply", "-f", "-")
	h.mustK("", "", "wait", "--for=condition=Ready", "workspace/acme", "--timeout=60s")
	h.mustK("root:acme", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"team-a"}}`, "apply", "-f", "-")
	h.mustK("root:acme", "", "wait", "--for=condition=Ready", "workspace/team-a", "--timeout=60s")
	h.mustK(ws, `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
	h.mustK(ws, "", "create", "clusterrole", "rp-namespaces", "--verb=get", "--resource=namespaces")
	h.mustK(ws, "", "create", "clusterrolebinding", "rp-namespaces", "--clusterrole=rp-namespaces", "--user=system:wharf:provider:resource-proxy")
	kc := c.WriteKubeconfig(t, "provider", c.UserConfig(t, providerUser))
	h.mustK(ws, "", "create", "secret", "generic", "prod", "-n", "default", "--from-file=kubeconfig="+kc)
	h.mustK(ws, `apiVersion: proxy.wharf.dev/v1alpha1
kind: ResourceProxy
metadata: {name: databases}
spec:
  target: {external: {name: prod, secretRef: {namespace: default, name: prod}}}
  resources: [{group: databases.example.com, version: v1, resource: databases}]
`, "apply", "-f", "-")
	ready := func(want string) func() error {
		return func() error {
			out, err := h.k(ws, "", "get", "resourceproxy", "databases", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
			if err != nil || out != want {
				return fmt.Errorf("reason %q (%v), want %q", out, err, want)
			}
			return nil
		}
	}
	eventually(t, "SecretForbidden before the grant", ready("SecretForbidden"))
	h.mustK(ws, "", "create", "role", "rp-secret", "-n", "default", "--verb=get", "--resource=secrets", "--resource-name=prod")
	h.mustK(ws, "", "create", "rolebinding", "rp-secret", "-n", "default", "--role=rp-secret", "--user=system:wharf:provider:resource-proxy")
	eventually(t, "Ready after the grant", ready("Ready"))
	h.mustK(ws, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"ext-db","namespace":"default"},"spec":{"size":1}}`, "create", "-f", "-")
	if out := h.mustK(ws, "", "get", "databases", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}"); out != "ext-db" {
		t.Fatalf("team-a sees %q", out)
	}
	// Both replicas down.
	if err := c.StopReplica(1); err != nil {
		t.Fatal(err)
	}
	if err := c.StopReplica(0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "503 with the target down", func() error {
		out, err := h.k(ws, "", "get", "databases", "-n", "default")
		if err == nil || !strings.Contains(out, `target "prod" for databases.example.com/v1 is unavailable`) {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if out := h.mustK(ws, "", "api-resources", "--api-group=databases.example.com", "--no-headers"); !strings.Contains(out, "databases") {
		t.Fatalf("api-resources with the target down: %s", out)
	}
	t.Logf("kubectl api-resources with the target down:\n%s", h.mustK(ws, "", "api-resources", "--api-group=databases.example.com"))
}
