package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

const edgeServer = "https://hub.example:9443/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s"

// TestEdgeKubeconfigUsers builds an edge kubeconfig from contexts whose
// user is a token, a client certificate and the wharf exec plugin, and
// loads each back the way kubectl does.
func TestEdgeKubeconfigUsers(t *testing.T) {
	dir := t.TempDir()
	certFile := filepath.Join(dir, "c.crt")
	if err := os.WriteFile(certFile, []byte("CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		check  func(t *testing.T, u *clientcmdapi.AuthInfo)
	}{
		{"token", nil, func(t *testing.T, u *clientcmdapi.AuthInfo) {
			if u.Token != "secret-token" {
				t.Fatalf("token %q", u.Token)
			}
		}},
		{"cert", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificate, u.ClientKeyData = "", certFile, []byte("KEY")
		}, func(t *testing.T, u *clientcmdapi.AuthInfo) {
			if u.ClientCertificate != certFile || string(u.ClientKeyData) != "KEY" || u.Token != "" {
				t.Fatalf("cert user %+v", u)
			}
		}},
		{"exec", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token = ""
			u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/usr/local/bin/wharf",
				Args: []string{"credential", "--issuer=https://idp", "--client-id=wharf"}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}, func(t *testing.T, u *clientcmdapi.AuthInfo) {
			if u.Exec == nil || u.Exec.Command != "/usr/local/bin/wharf" || strings.Join(u.Exec.Args, " ") != "credential --issuer=https://idp --client-id=wharf" {
				t.Fatalf("exec user %+v", u.Exec)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := hubFlags{kubeconfig: writeKubeconfig(t, tc.mutate)}.connect()
			if err != nil {
				t.Fatal(err)
			}
			ca, err := c.caPEM()
			if err != nil {
				t.Fatal(err)
			}
			b, err := clientcmd.Write(*edgeKubeconfig("lab", edgeServer, ca, c.user))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(b)
			if err != nil {
				t.Fatal(err)
			}
			kctx := cfg.Contexts[cfg.CurrentContext]
			cl := cfg.Clusters[kctx.Cluster]
			if cl.Server != edgeServer || string(cl.CertificateAuthorityData) != testCA || cl.InsecureSkipTLSVerify {
				t.Fatalf("cluster %+v", cl)
			}
			tc.check(t, cfg.AuthInfos[kctx.AuthInfo])
			if _, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig(); err != nil {
				t.Fatalf("kubectl could not use it: %v", err)
			}
		})
	}
}

func TestEdgeURL(t *testing.T) {
	c, err := hubFlags{kubeconfig: writeKubeconfig(t, nil)}.connect()
	if err != nil {
		t.Fatal(err)
	}
	e := testEdge(edgesv1.TypeKubernetes)
	if _, err := edgeURL(c, e); err == nil || !strings.Contains(err.Error(), "has not connected yet") {
		t.Fatalf("empty status.URL: %v", err)
	}
	e.Status.URL = "/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s"
	if got, err := edgeURL(c, e); err != nil || got != edgeServer {
		t.Fatalf("relative URL: %q %v", got, err)
	}
	e.Status.URL = edgeServer
	if got, err := edgeURL(c, e); err != nil || got != edgeServer {
		t.Fatalf("absolute URL: %q %v", got, err)
	}
	// A workspace admin can write status: the caller's credential must
	// never follow a URL off this edge's own tunnel path on the hub.
	for _, bad := range []string{
		"http://hub.example:9443/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s",
		"https://evil.example/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s",
		"https://hub.example:9444/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s",
		"https://hub.example:9443/services/providers/other/steal",
		"https://hub.example:9443/services/providers/edges/edgeproxy/clusters/zzzzzzzzzzzzzzzz/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s",
		"https://hub.example:9443/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/other/k8s",
		"https://hub.example:9443/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/ssh",
		"https://hub.example:9443/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s/../../../../../../../other",
		"https://user@hub.example:9443/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s",
		"//evil.example/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/k8s",
	} {
		e.Status.URL = bad
		if got, err := edgeURL(c, e); err == nil {
			t.Errorf("status.URL %q accepted as %q", bad, got)
		}
	}
}

func TestWritePrivate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kc")
	if err := os.WriteFile(p, []byte("old contents, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePrivate(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if st.Mode().Perm() != 0o600 || string(b) != "new" {
		t.Fatalf("mode %v contents %q", st.Mode().Perm(), b)
	}
}
