package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// newCommand registers klog's global flags, once per process; the
	// subcommands under test do not need them.
	cmd := &cobra.Command{Use: "wharf-hub", SilenceUsage: true}
	cmd.AddCommand(newSnapshotCommand(), newProbeCommand())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestSubcommandErrors: mistakes are refused before anything is dialed or
// written, with a message naming the fix.
func TestSubcommandErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"snapshot", "save", "f"}, "--data-dir or --etcd-servers is required"},
		{[]string{"snapshot", "save", "f", "--data-dir", dir, "--etcd-servers", "https://e:2379"}, "exclusive"},
		{[]string{"snapshot", "save", "f", "--data-dir", dir}, "is a hub running"},
		{[]string{"snapshot", "save", "f", "--etcd-servers", "https://e:2379", "--etcd-cafile", filepath.Join(dir, "none")}, "etcd client TLS"},
		{[]string{"snapshot", "restore", "f"}, "--data-dir is required"},
		{[]string{"snapshot", "restore", filepath.Join(dir, "missing.db"), "--data-dir", filepath.Join(dir, "new")}, "restoring"},
		{[]string{"probe", "/metrics", "--data-dir", dir}, "must be /livez, /readyz or /healthz"},
		{[]string{"probe", "/readyz"}, "--data-dir is required"},
		{[]string{"probe", "/readyz", "--data-dir", dir}, "reading the admin token"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestSubcommandHelp: the subcommands print their own flags, not the
// hub's flag sets.
func TestSubcommandHelp(t *testing.T) {
	out, err := execute(t, "snapshot", "save", "--help")
	if err != nil || !strings.Contains(out, "--etcd-servers") || strings.Contains(out, "--oidc-issuer-url") {
		t.Fatalf("snapshot save --help: %v\n%s", err, out)
	}
}
