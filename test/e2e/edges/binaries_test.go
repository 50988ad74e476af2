package edges

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

// builtBinary returns $WHARF_BIN_DIR/name (make test builds it there),
// else <repo>/bin/name (run `make build` first so it is current), else a
// go build made once per run. The path has no symlinks, so it matches
// /proc/<pid>/exe.
func builtBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{os.Getenv("WHARF_BIN_DIR"), filepath.Join(root, "bin")} {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExec(p) {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
		}
	}
	v, _ := binaries.LoadOrStore(pkg, &binaryBuild{})
	b := v.(*binaryBuild)
	b.once.Do(func() { b.path, b.err = goBuild(root, pkg, name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func goBuild(root, pkg, name string) (string, error) {
	dir, err := os.MkdirTemp("", "wharf-edges-e2e-bin")
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

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func hubBinary(t *testing.T) string   { return builtBinary(t, "./cmd/wharf-hub", "wharf-hub") }
func wharfBinary(t *testing.T) string { return builtBinary(t, "./cmd/wharf", "wharf") }
func agentBinary(t *testing.T) string { return builtBinary(t, "./cmd/wharf-agent", "wharf-agent") }
func edgesProvider(t *testing.T) string {
	return builtBinary(t, "./cmd/wharf-provider-edges", "wharf-provider-edges")
}

// probeProvider is test/e2e/edgeprobe, a provider with edgeProxyAccess;
// make build does not build it, so it is always built here.
func probeProvider(t *testing.T) string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := binaries.LoadOrStore("./test/e2e/edgeprobe", &binaryBuild{})
	b := v.(*binaryBuild)
	b.once.Do(func() { b.path, b.err = goBuild(root, "./test/e2e/edgeprobe", "wharf-provider-edgeprobe") })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
