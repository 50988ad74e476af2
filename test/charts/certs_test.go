package charts

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCertificates: the certificates the hub chart generates are
// the ones its pods need: the hub's serves the Service name and every
// replica's --internal-url name, the etcd members' serves each member's
// StatefulSet DNS name, and the hub's etcd client certificate chains to
// the CA the members trust.
func TestGeneratedCertificates(t *testing.T) {
	helm, _ := chartTools(t)
	out, err := run(t, nil, helm, "template", "rel", filepath.Join(repoRoot(t), "charts", "wharf-hub"), "--namespace", "wharf", "--kube-version", kubeVersion)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	secrets := map[string]map[string]string{}
	var args []string
	for _, d := range yamlDocs(t, out) {
		meta, _ := d["metadata"].(map[string]any)
		if d["kind"] == "Secret" {
			data := map[string]string{}
			for k, v := range d["data"].(map[string]any) {
				raw, err := base64.StdEncoding.DecodeString(v.(string))
				if err != nil {
					t.Fatal(err)
				}
				data[k] = string(raw)
			}
			secrets[meta["name"].(string)] = data
		}
	}
	for _, c := range containers(t, out) {
		if strings.HasSuffix(c.command, "/etcd") {
			args = c.args
		}
	}

	for _, tc := range []struct {
		secret, caSecret string
		usage            x509.ExtKeyUsage
		names            []string
	}{
		{"rel-wharf-hub-tls", "rel-wharf-hub-tls", x509.ExtKeyUsageServerAuth, []string{
			"rel-wharf-hub.wharf.svc", "rel-wharf-hub-0.rel-wharf-hub-peers.wharf.svc", "rel-wharf-hub-1.rel-wharf-hub-peers.wharf.svc"}},
		{"rel-wharf-hub-etcd-tls", "rel-wharf-hub-etcd-tls", x509.ExtKeyUsageServerAuth, []string{
			"rel-wharf-hub-etcd-0.rel-wharf-hub-etcd-peers.wharf.svc", "rel-wharf-hub-etcd-2.rel-wharf-hub-etcd-peers.wharf.svc"}},
		// Peers authenticate each other with the same certificate.
		{"rel-wharf-hub-etcd-tls", "rel-wharf-hub-etcd-tls", x509.ExtKeyUsageClientAuth, []string{""}},
		{"rel-wharf-hub-etcd-client-tls", "rel-wharf-hub-etcd-tls", x509.ExtKeyUsageClientAuth, []string{""}},
	} {
		s, ca := secrets[tc.secret], secrets[tc.caSecret]
		if s == nil || ca == nil {
			t.Fatalf("no Secret %s or %s rendered", tc.secret, tc.caSecret)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(ca["ca.crt"])) {
			t.Fatalf("%s: no CA in ca.crt", tc.caSecret)
		}
		block, _ := pem.Decode([]byte(s["tls.crt"]))
		if block == nil || s["tls.key"] == "" {
			t.Fatalf("%s: no certificate or key", tc.secret)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tc.names {
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("%s for %q (%v): %v", tc.secret, n, tc.usage, err)
			}
		}
	}

	// The initial cluster names all three members by their DNS names.
	var initial string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
			initial = v
		}
	}
	if got := strings.Count(initial, ".rel-wharf-hub-etcd-peers.wharf.svc:2380"); got != 3 {
		t.Fatalf("--initial-cluster=%s: %d members, want 3", initial, got)
	}
}
