package revdial

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestImportGuard keeps revdial (and sdk/, once it exists) free of the hub,
// the apiserver and etcd: agents and provider authors import these packages
// on their own, and must not drag the hub's dependency tree along.
func TestImportGuard(t *testing.T) {
	forbidden := []string{
		"github.com/wharfhub/wharf/hub",
		"k8s.io/apiserver",
		"go.etcd.io/etcd",
	}
	patterns := []string{"."}
	if fi, err := os.Stat(filepath.Join("..", "sdk")); err == nil && fi.IsDir() {
		patterns = append(patterns, "../sdk/...")
	}
	for _, pat := range patterns {
		t.Run(pat, func(t *testing.T) {
			cmd := exec.Command(goTool(), "list", "-deps", pat)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps %s: %v\n%s", pat, err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, bad := range forbidden {
					if dep == bad || strings.HasPrefix(dep, bad+"/") {
						t.Errorf("%s depends on %s", pat, dep)
					}
				}
			}
		})
	}
}

// goTool prefers the go command of the toolchain running the test.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
