package hub

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSecretsEncryptedAtRest passes an upstream encryption config and reads
// the stored bytes straight from etcd.
func TestSecretsEncryptedAtRest(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	cfg := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{etcdServers: endpoints, extraArgs: []string{"--encryption-provider-config", cfg}})
	h.mustKubectl("root", "create", "secret", "generic", "topsecret", "--from-literal=password=plaintext-marker")
	h.mustKubectl("root", "create", "configmap", "notsecret", "--from-literal=v=visible-marker")
	resp, err := etcd.Get(context.Background(), "/registry/core/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var sawSecret, sawConfigMap bool
	for _, kv := range resp.Kvs {
		k, v := string(kv.Key), string(kv.Value)
		switch {
		case strings.HasPrefix(k, "/registry/core/secrets/") && strings.HasSuffix(k, "/topsecret"):
			sawSecret = true
			if !strings.HasPrefix(v, "k8s:enc:aescbc:v1:key1:") || strings.Contains(v, "plaintext-marker") {
				t.Errorf("secret stored unencrypted: %q", v[:min(len(v), 60)])
			}
		case strings.HasSuffix(k, "/notsecret"):
			sawConfigMap = strings.Contains(v, "visible-marker")
		}
	}
	if !sawSecret || !sawConfigMap {
		t.Errorf("keys not found: secret=%v configmap=%v", sawSecret, sawConfigMap)
	}
	if got := h.mustKubectl("root", "get", "secret", "topsecret", "-o", "jsonpath={.data.password}"); got != "cGxhaW50ZXh0LW1hcmtlcg==" {
		t.Errorf("secret read back = %q", got)
	}
}

// TestHealthAndMetrics checks the upstream health endpoints and the
// workspace gauge.
func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "m1")
	for _, p := range []string{"/healthz", "/livez", "/readyz?verbose"} {
		code, body, err := h.get(p)
		if err != nil || code != http.StatusOK {
			t.Errorf("GET %s = %d %v %s", p, code, err, body)
		}
		if p == "/readyz?verbose" && !strings.Contains(body, "wharf-workspace-index ok") {
			t.Errorf("readyz lacks the workspace index check: %s", body)
		}
	}
	eventually(t, 30*1e9, func() error {
		_, body, err := h.get("/metrics")
		if err != nil {
			return err
		}
		// root, root:users (the hub creates it at start) and m1.
		for _, want := range []string{`wharf_workspaces{phase="Ready"} 3`, "apiserver_request_total"} {
			if !strings.Contains(body, want) {
				return &missing{want}
			}
		}
		return nil
	})
}

type missing struct{ s string }

func (m *missing) Error() string { return "metrics lack " + m.s }
