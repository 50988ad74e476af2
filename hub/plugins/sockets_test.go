package plugins

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// listen creates a unix socket file at path and closes the listener
// without unlinking it, as a killed process leaves it.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	_ = l.Close()
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// removeSockets deletes dead sockets in the hub's own 0700 directory and
// nothing else: no other file type, nothing behind a symlink, and nothing
// at all in a directory that is not private or is a symlink.
func TestRemoveSockets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir, outside string) string // returns the dir to clean
		wantErr bool
		removed int
		left    []string // entries left in the cleaned dir
		outside []string // entries left in the directory outside
	}{
		{name: "sockets go, files stay", removed: 2, left: []string{"keep.txt"},
			setup: func(t *testing.T, dir, _ string) string {
				listen(t, filepath.Join(dir, "http.sock"))
				listen(t, filepath.Join(dir, "plugin123"))
				if err := os.WriteFile(filepath.Join(dir, "keep.txt"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
				return dir
			}},
		{name: "symlink to a socket is not followed", removed: 0, left: []string{"link"}, outside: []string{"victim.sock"},
			setup: func(t *testing.T, dir, outside string) string {
				listen(t, filepath.Join(outside, "victim.sock"))
				if err := os.Symlink(filepath.Join(outside, "victim.sock"), filepath.Join(dir, "link")); err != nil {
					t.Fatal(err)
				}
				return dir
			}},
		{name: "symlinked dir is refused", wantErr: true, outside: []string{"victim.sock"},
			setup: func(t *testing.T, dir, outside string) string {
				listen(t, filepath.Join(outside, "victim.sock"))
				link := filepath.Join(dir, "provider")
				if err := os.Symlink(outside, link); err != nil {
					t.Fatal(err)
				}
				return link
			}},
		{name: "dir open to others is refused", wantErr: true, left: []string{"http.sock"},
			setup: func(t *testing.T, dir, _ string) string {
				listen(t, filepath.Join(dir, "http.sock"))
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				return dir
			}},
		{name: "missing dir", wantErr: true,
			setup: func(t *testing.T, dir, _ string) string { return filepath.Join(dir, "absent") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := filepath.Join(t.TempDir(), "p"), t.TempDir()
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			target := tc.setup(t, dir, outside)
			n, err := removeSockets(target)
			if (err != nil) != tc.wantErr || n != tc.removed {
				t.Fatalf("removeSockets = %d, %v; want %d, error %v", n, err, tc.removed, tc.wantErr)
			}
			if got := names(t, dir); tc.left != nil && !slices.Equal(got, tc.left) {
				t.Errorf("left in dir: %v, want %v", got, tc.left)
			}
			if got := names(t, outside); !slices.Equal(got, tc.outside) {
				t.Errorf("left outside: %v, want %v", got, tc.outside)
			}
		})
	}
}

// sockets lists the socket files in a provider's socket dir.
func sockets(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.Type()&os.ModeSocket != 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// With a real plugin process: sockets of an earlier run (a hub that was
// SIGKILLed) are gone at start, those of a SIGKILLed plugin are gone once
// it has been restarted, and none are left after the host stops. At any
// moment only the running process's two sockets (HTTP and go-plugin's
// control socket) exist.
func TestHostRemovesStaleSockets(t *testing.T) {
	dataDir := t.TempDir()
	sockDir, err := privateDir(filepath.Join(dataDir, "plugins"), "second")
	if err != nil {
		t.Fatal(err)
	}
	goneDir, err := privateDir(filepath.Join(dataDir, "plugins"), "removed-provider")
	if err != nil {
		t.Fatal(err)
	}
	listen(t, filepath.Join(sockDir, "http.sock"))
	listen(t, filepath.Join(sockDir, "plugin111"))
	listen(t, filepath.Join(sockDir, "plugin222"))
	listen(t, filepath.Join(goneDir, "plugin333"))

	h, stop := runHost(t, t.Context(), Config{DataDir: dataDir, Specs: []Spec{{Name: "second", Path: secondBin}}})
	st := waitState(t, h, "second", StateRunning)
	check := func(when string) {
		t.Helper()
		got := sockets(t, sockDir)
		if len(got) != 2 || !slices.Contains(got, "http.sock") || slices.ContainsFunc([]string{"plugin111", "plugin222"}, func(s string) bool { return slices.Contains(got, s) }) {
			t.Errorf("%s: sockets %v, want http.sock and one new control socket", when, got)
		}
	}
	check("after start")
	if got := sockets(t, goneDir); len(got) != 0 {
		t.Errorf("sockets of an unconfigured provider left: %v", got)
	}
	before := sockets(t, sockDir)

	if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a restarted plugin", func() bool {
		s, _ := h.Status("second")
		return s.State == StateRunning && s.Pid != st.Pid
	})
	check("after a SIGKILLed plugin restarted")
	for _, s := range before {
		if s != "http.sock" && slices.Contains(sockets(t, sockDir), s) {
			t.Errorf("control socket %s of the killed process is still there", s)
		}
	}

	stop()
	if got := sockets(t, sockDir); len(got) != 0 {
		t.Errorf("after stop: sockets %v left", got)
	}
}
