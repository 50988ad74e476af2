package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RepoRoot is the directory of the wharf module's go.mod at or above the
// working directory (a test runs in its package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/wharfhub/wharf\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("the wharf module root is not above the working directory")
		}
		dir = parent
	}
}

// Binary is a binary `make build` made: $WHARF_BIN_DIR/name, else
// <repo>/bin/name. A missing one fails the test: make test builds them
// first, so nothing is skipped there.
func Binary(t testing.TB, name string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{os.Getenv("WHARF_BIN_DIR"), filepath.Join(root, "bin")} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s not built: run `make build`", name)
	return ""
}

// builds caches Build per package and name for the test binary's life.
var builds sync.Map // "<package path> <name>" -> *build

type build struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the package pkg (relative to the repository root, e.g.
// ./test/e2e/portalprobe) once per test run and returns the executable,
// for test-only programs that `make build` does not make.
func Build(t testing.TB, pkg, name string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(pkg+" "+name, &build{})
	b := v.(*build)
	b.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "wharf-test-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
