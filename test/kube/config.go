package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config is the admin (system:masters) rest config for replica 0. The
// returned value is a fresh copy the caller may change.
func (c *Cluster) Config() *rest.Config { return c.ReplicaConfig(0) }

// ReplicaConfig is the admin rest config for replica i.
func (c *Cluster) ReplicaConfig(i int) *rest.Config {
	return c.tokenConfig(i, c.adminToken)
}

// UserConfig is a rest config authenticating as the named Options.Users
// entry with its static token, so the server sees that user and its groups
// as if it had logged in; fatal for an unknown name.
func (c *Cluster) UserConfig(t testing.TB, name string) *rest.Config {
	t.Helper()
	return c.tokenConfig(0, c.Token(t, name))
}

// Token is the static bearer token of the named user (AdminUser included).
func (c *Cluster) Token(t testing.TB, name string) string {
	t.Helper()
	tok, ok := c.userTokens[name]
	if !ok {
		t.Fatalf("kube fixture: no user %q; list it in Options.Users", name)
	}
	return tok
}

// ImpersonateConfig is the admin config impersonating user and groups: any
// identity, without declaring it at start. Requests are authorized as that
// identity, so RBAC applies to it.
func (c *Cluster) ImpersonateConfig(user string, groups ...string) *rest.Config {
	cfg := c.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// Clientset is a typed admin client for replica 0.
func (c *Cluster) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatalf("kube fixture: clientset: %v", err)
	}
	return cs
}

// Kubeconfig is the path of the admin kubeconfig (replica 0).
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// WriteKubeconfig writes a kubeconfig for cfg (bearer token and
// impersonation included) into the cluster's temp dir and returns its path,
// for running kubectl or another binary as that identity.
func (c *Cluster) WriteKubeconfig(t testing.TB, name string, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(c.dir, name+".kubeconfig")
	if err := writeKubeconfig(path, cfg); err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
	return path
}

func (c *Cluster) tokenConfig(i int, token string) *rest.Config {
	return &rest.Config{
		Host:        "https://" + c.ReplicaHost(i),
		BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: append([]byte(nil), c.pki.caPEM...),
		},
		// Client-side throttling only slows tests down; the server's
		// priority and fairness still applies.
		QPS:   200,
		Burst: 400,
	}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["wharf-test"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		Token:             cfg.BearerToken,
		Impersonate:       cfg.Impersonate.UserName,
		ImpersonateGroups: cfg.Impersonate.Groups,
	}
	kc.Contexts["wharf-test"] = &clientcmdapi.Context{Cluster: "wharf-test", AuthInfo: "user"}
	kc.CurrentContext = "wharf-test"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kubeconfig dir: %w", err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
