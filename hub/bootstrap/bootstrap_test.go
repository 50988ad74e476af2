package bootstrap

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

func TestLoadOrCreateToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "admin-token")
	tok, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) < 40 {
		t.Fatalf("token too short: %d chars", len(tok))
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode = %v, %v", fi.Mode(), err)
	}
	again, err := LoadOrCreateToken(path)
	if err != nil || again != tok {
		t.Fatalf("token not stable: %q vs %q (%v)", again, tok, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	if _, err := LoadOrCreateToken(empty); err == nil {
		t.Fatal("empty token file accepted")
	}
}

// A token the hub could not have written is refused (attack review 17):
// readable or writable by others, a symlink, or another user's file.
func TestLoadOrCreateTokenRefusesPlanted(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.WriteFile(real, []byte("planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(p string) error{
		"world-readable": func(p string) error {
			if err := os.WriteFile(p, []byte("planted\n"), 0o644); err != nil {
				return err
			}
			return os.Chmod(p, 0o644)
		},
		"group-writable": func(p string) error {
			if err := os.WriteFile(p, []byte("planted\n"), 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o620)
		},
		"symlink":   func(p string) error { return os.Symlink(real, p) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
	}
	if os.Geteuid() == 0 {
		cases["another user's"] = func(p string) error {
			if err := os.WriteFile(p, []byte("planted\n"), 0o600); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "admin-token")
			if err := plant(p); err != nil {
				t.Fatal(err)
			}
			if tok, err := LoadOrCreateToken(p); err == nil {
				t.Fatalf("planted token accepted: %q", tok)
			}
		})
	}
}

func TestRootCAAndKubeconfig(t *testing.T) {
	chain, _, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := RootCA(chain)
	if err != nil || ca == nil {
		t.Fatalf("RootCA = %v, %v", ca, err)
	}
	if _, err := RootCA([]byte("junk")); err == nil {
		t.Fatal("junk accepted")
	}
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := WriteKubeconfig(path, Kubeconfig{Server: "https://127.0.0.1:9443/clusters/root", CAData: ca, Token: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:9443/clusters/root" || cfg.BearerToken != "s3cret" || len(cfg.CAData) == 0 {
		t.Fatalf("kubeconfig = host %q token set=%v ca=%d", cfg.Host, cfg.BearerToken != "", len(cfg.CAData))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig mode = %v", fi.Mode())
	}
}
