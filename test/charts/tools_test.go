package charts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// chartTools returns helm and kubeconform, built by test/charttools/build.sh
// if the cache lacks them (the Makefile builds them before `go test`, so
// this is a cache lookup there). A failed build fails the test.
func chartTools(t testing.TB) (helm, kubeconform string) {
	t.Helper()
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "test", "charttools", "build.sh"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("building the chart tools (make chart-tools): %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	dir := lines[len(lines)-1]
	helm, kubeconform = filepath.Join(dir, "helm"), filepath.Join(dir, "kubeconform")
	for _, b := range []string{helm, kubeconform} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("chart tool missing after build: %v", err)
		}
	}
	return helm, kubeconform
}

// run runs a tool and returns its combined output.
func run(t testing.TB, stdin []byte, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	// helm keeps caches and repositories in these; none may leak into or
	// out of the developer's own.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// binary is a binary `make build` put in bin/ (or $WHARF_BIN_DIR).
func binary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("WHARF_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not built (run make build): %v", name, err)
	}
	return p
}
