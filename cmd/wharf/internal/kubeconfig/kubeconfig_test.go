package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestContextName(t *testing.T) {
	for in, want := range map[string]string{
		"https://hub.example.com":      "wharf-hub.example.com",
		"https://127.0.0.1:9443":       "wharf-127.0.0.1-9443",
		"https://[::1]:9443/some/path": "wharf---1-9443",
	} {
		if got, err := ContextName(in); err != nil || got != want {
			t.Errorf("ContextName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ContextName("not a url"); err == nil {
		t.Error("ContextName accepted a URL without host")
	}
	if _, err := ContextName("http://hub.example.com"); err == nil {
		t.Error("ContextName accepted a plain-http hub")
	}
}

func TestMergeKeepsOtherEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "config")
	other := clientcmdapi.NewConfig()
	other.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://prod"}
	other.AuthInfos["prod"] = &clientcmdapi.AuthInfo{Token: "keep"}
	other.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "prod"}
	other.CurrentContext = "prod"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*other, path); err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"https://hub/clusters/root", "https://hub/clusters/root:users:ada"} {
		e := Entry{Name: "wharf-hub", Cluster: &clientcmdapi.Cluster{Server: server}, User: &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "wharf", APIVersion: "client.authentication.k8s.io/v1"}}}
		if err := Merge(path, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.CurrentContext != "wharf-hub" || got.Clusters["wharf-hub"].Server != "https://hub/clusters/root:users:ada" ||
		got.AuthInfos["prod"].Token != "keep" || got.Contexts["prod"] == nil || len(got.Contexts) != 2 {
		t.Errorf("merged config: current %q, clusters %v, contexts %d", got.CurrentContext, got.Clusters, len(got.Contexts))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v %v, want 0600", fi.Mode().Perm(), err)
	}
}

func TestFromBytes(t *testing.T) {
	b := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://hub/clusters/root", certificate-authority-data: "Y2E="}}]
users: [{name: u, user: {token: static}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	e, err := FromBytes(b, "wharf-hub")
	if err != nil || e.Name != "wharf-hub" || e.Cluster.Server != "https://hub/clusters/root" || string(e.Cluster.CertificateAuthorityData) != "ca" || e.User.Token != "static" {
		t.Fatalf("FromBytes = %+v, %v", e, err)
	}
	if _, err := FromBytes([]byte("apiVersion: v1\nkind: Config\n"), "x"); err == nil {
		t.Error("FromBytes accepted a kubeconfig without contexts")
	}
}
