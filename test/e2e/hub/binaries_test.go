package hub

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wharfhub/wharf/test/kube"
)

// binaries caches builds per package for the test run.
var binaries sync.Map // package path -> *binaryBuild

type binaryBuild struct {
	once sync.Once
	path string
	err  error
}

// TestMain removes the builds made for this run: each is a directory of
// its own in $TMPDIR, and left behind they fill the disk run after run.
func TestMain(m *testing.M) {
	code := m.Run()
	binaries.Range(func(_, v any) bool {
		if b := v.(*binaryBuild); b.path != "" {
			_ = os.RemoveAll(filepath.Dir(b.path))
		}
		return true
	})
	os.Exit(code)
}

// builtBinary returns the executable name built from pkg (relative to the
// repository root): $WHARF_BIN_DIR/name when make test has built it
// already, else a build made once per test run. The path has no symlinks,
// so tests can match it against /proc/<pid>/exe.
func builtBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	if dir := os.Getenv("WHARF_BIN_DIR"); dir != "" {
		if p := filepath.Join(dir, name); checkExec(p) == nil {
			return p
		}
	}
	v, _ := binaries.LoadOrStore(pkg, &binaryBuild{})
	b := v.(*binaryBuild)
	b.once.Do(func() { b.path, b.err = build(pkg, name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func build(pkg, name string) (string, error) {
	root, err := kube.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "wharf-e2e-bin")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", path, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return filepath.EvalSymlinks(path)
}

func checkExec(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}

func hubBinary(t *testing.T) string   { return builtBinary(t, "./cmd/wharf-hub", "wharf-hub") }
func wharfBinary(t *testing.T) string { return builtBinary(t, "./cmd/wharf", "wharf") }

// providerBinary builds the provider package pkg as wharf-provider-<name>.
func providerBinary(t *testing.T, pkg, name string) string {
	return builtBinary(t, pkg, "wharf-provider-"+name)
}

// exampleProvider is the SDK's example provider.
func exampleProvider(t *testing.T) string {
	return providerBinary(t, "./sdk/internal/exampleprovider", "example")
}

// singleProvider is testdata/singleprovider, a replicas: single provider
// that echoes the headers it receives.
func singleProvider(t *testing.T) string {
	return providerBinary(t, "./test/e2e/hub/testdata/singleprovider", "single")
}
