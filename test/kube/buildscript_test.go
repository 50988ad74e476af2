package kube_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/kube"
)

// TestBuildScriptCacheDir checks the cache key contract without building:
// the directory is a 16-hex-digit key under the chosen cache root, and the
// same inputs give the same key.
func TestBuildScriptCacheDir(t *testing.T) {
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "test", "tools", "build.sh")
	cacheRoot := t.TempDir()
	printDir := func() string {
		cmd := exec.Command("bash", script, "--print-dir")
		cmd.Env = append(cmd.Environ(), "WHARF_KUBE_TOOLS_CACHE="+cacheRoot)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s --print-dir: %v", script, err)
		}
		return strings.TrimSpace(string(out))
	}
	first, second := printDir(), printDir()
	if first != second {
		t.Fatalf("cache dir not stable: %q then %q", first, second)
	}
	if filepath.Dir(first) != cacheRoot {
		t.Fatalf("cache dir %q is not under WHARF_KUBE_TOOLS_CACHE %q", first, cacheRoot)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(filepath.Base(first)) {
		t.Fatalf("cache key %q is not 16 hex digits", filepath.Base(first))
	}
}
