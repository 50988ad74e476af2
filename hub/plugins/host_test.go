package plugins

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// Two real providers run, serve HTTP through the Host's transports, get
// their config and data dirs but not the hub's environment, survive a
// kill -9 by restart, and are all gone after shutdown.
func TestHostSupervises(t *testing.T) {
	t.Setenv("WHARF_EXAMPLE_ENV", "hub-secret")
	dataDir := t.TempDir()
	h, stop := runHost(t, context.Background(), Config{
		DataDir: dataDir,
		HubURL:  "https://hub.internal:9443",
		RestConfig: func(_ context.Context, d *plugin.Descriptor) (plugin.RestConfig, error) {
			return plugin.RestConfig{Host: "https://hub.internal:9443", BearerToken: "token-" + d.Name}, nil
		},
		Specs:           []Spec{{Name: "example", Path: exampleBin}, {Name: "second", Path: secondBin}},
		ProviderConfigs: map[string][]byte{"example": []byte("greeting: hello\nchild: true\nkeepChild: true\n")},
	})
	changes := h.Subscribe(t.Context())

	ex := waitState(t, h, "example", StateRunning)
	sec := waitState(t, h, "second", StateRunning)
	if ex.Descriptor == nil || ex.Descriptor.Name != "example" || ex.Descriptor.Replicas != plugin.ReplicasSingle {
		t.Fatalf("example descriptor = %+v", ex.Descriptor)
	}
	select {
	case <-changes:
	default:
		t.Fatal("no change notification after providers started")
	}

	cfg := get(t, h, "example", plugin.BackendPrefix+"config")
	want := map[string]any{
		"greeting":  "hello",
		"hubURL":    "https://hub.internal:9443",
		"dataDir":   filepath.Join(dataDir, "providers", "example"),
		"restToken": "token-example",
		"env":       "", // not inherited: IsolateEnv
		"path":      os.Getenv("PATH"),
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("example /config %s = %v, want %v", k, cfg[k], v)
		}
	}
	// A child the plugin leaves behind at Stop; only the group kill ends it.
	child := int(cfg["childPID"].(float64))
	if child == 0 || !processAlive(child) {
		t.Fatalf("example child pid %d not running", child)
	}
	if got := get(t, h, "second", plugin.BackendPrefix+"pid"); got["name"] != "second" || int(got["pid"].(float64)) != sec.Pid {
		t.Errorf("second /pid = %v, want pid %d", got, sec.Pid)
	}
	for _, d := range []string{"plugins", "plugins/example", "providers/example"} {
		fi, err := os.Stat(filepath.Join(dataDir, d))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, mode %v, want 0700", d, err, fi.Mode().Perm())
		}
	}

	// kill -9: the supervisor notices and restarts only that plugin.
	if err := syscall.Kill(ex.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var again Status
	waitFor(t, "example restarted", func() bool {
		again, _ = h.Status("example")
		return again.State == StateRunning && again.Restarts == 1
	})
	if again.Pid == ex.Pid || again.LastError == "" {
		t.Errorf("after restart: pid %d (was %d), last error %q", again.Pid, ex.Pid, again.LastError)
	}
	if got := get(t, h, "example", plugin.BackendPrefix+"config"); int(got["pid"].(float64)) != again.Pid {
		t.Errorf("example served by pid %v, want %d", got["pid"], again.Pid)
	}
	if st, _ := h.Status("second"); st.Restarts != 0 || st.Pid != sec.Pid || st.State != StateRunning {
		t.Errorf("second disturbed: %+v", st)
	}

	againChild := int(get(t, h, "example", plugin.BackendPrefix+"config")["childPID"].(float64))
	stop()
	// The plugins themselves are reaped before Run returns; their children
	// were SIGKILLed with the group but are not ours to wait for, so poll.
	for _, pid := range []int{ex.Pid, child, again.Pid, againChild, sec.Pid} {
		waitFor(t, "pid "+strconv.Itoa(pid)+" gone", func() bool { return !processAlive(pid) })
	}
	for _, st := range h.List() {
		if st.State != StateStopped {
			t.Errorf("%s: state %s after shutdown", st.Name, st.State)
		}
		if _, ok := h.Transport(st.Name); ok {
			t.Errorf("%s: transport still offered after shutdown", st.Name)
		}
	}
}

// Configuration errors fail only the provider concerned, clearly, and for
// good: a restart cannot fix them.
func TestHostConfigurationFailures(t *testing.T) {
	h, _ := runHost(t, context.Background(), Config{Specs: []Spec{
		{Name: "second", Path: secondBin},
		{Name: "example", Path: exampleBin, Checksum: make([]byte, 32)},
		{Name: "other", Path: exampleBin},
		{Name: "missing", Path: filepath.Join(t.TempDir(), "nope")},
	}})
	tests := []struct {
		name    string
		wantErr string
	}{
		{name: "example", wantErr: "does not match its pinned sha256 checksum"},
		{name: "other", wantErr: `manifest name "example" does not match configured provider name "other"`},
		{name: "missing", wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := waitState(t, h, tt.name, StateFailed)
			if !strings.Contains(st.LastError, tt.wantErr) {
				t.Errorf("last error %q, want it to contain %q", st.LastError, tt.wantErr)
			}
			if st.Restarts != 0 {
				t.Errorf("restarts = %d, want 0 for a configuration error", st.Restarts)
			}
			if _, ok := h.Transport(tt.name); ok {
				t.Error("transport offered for a failed provider")
			}
		})
	}
	waitState(t, h, "second", StateRunning)
	if _, ok := h.Transport("second"); !ok {
		t.Error("healthy provider has no transport")
	}
}

// --provider-dir binaries run under their manifest names, with configs
// keyed by that name; an explicit --provider of the same name wins.
func TestHostProviderDir(t *testing.T) {
	dir := t.TempDir()
	for link, target := range map[string]string{DirPrefix + "a": secondBin, DirPrefix + "b": exampleBin} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not a plugin"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.Dir = dir
	o.Providers = []string{"example=" + exampleBin}
	specs, err := o.Specs()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := runHost(t, context.Background(), Config{Specs: specs, ProviderConfigs: map[string][]byte{"example": []byte("greeting: hi\n")}})
	waitState(t, h, "second", StateRunning)
	ex := waitState(t, h, "example", StateRunning)
	if ex.Path != exampleBin {
		t.Errorf("example from %s, want the explicit --provider %s", ex.Path, exampleBin)
	}
	if got := get(t, h, "example", plugin.BackendPrefix+"config"); got["greeting"] != "hi" {
		t.Errorf("greeting = %v", got["greeting"])
	}
	if n := len(h.List()); n != 2 {
		t.Errorf("%d providers, want 2: %+v", n, h.List())
	}
}
