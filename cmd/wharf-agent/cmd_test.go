package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("version: %q, %v", out, err)
	}
}

// TestRunFlagErrors: the flag mistakes are refused before anything is
// dialed or written.
func TestRunFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bundleFile := filepath.Join(dir, "bundle")
	if err := os.WriteFile(bundleFile, []byte("not-a-bundle\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "--state-dir is required"},
		{[]string{"run", "--state-dir", filepath.Join(dir, "s1"), "--join", "x", "--join-file", bundleFile}, "exclusive"},
		{[]string{"run", "--state-dir", filepath.Join(dir, "s2"), "--join-file", bundleFile}, "not a wharf-join-v1 bundle"},
		{[]string{"run", "--state-dir", filepath.Join(dir, "s3")}, "run once with --join"},
		{[]string{"run", "--state-dir", filepath.Join(dir, "s4"), "--identity", "root"}, "must be impersonate or agent"},
		{[]string{"run", "--state-dir", open}, "only its owner can access"},
	} {
		_, err := execute(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
