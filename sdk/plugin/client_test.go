package plugin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// exampleBin is the example provider, built once for the whole package.
var exampleBin string

func TestMain(m *testing.M) {
	if os.Getenv(fakeHubEnv) != "" {
		runFakeHub()
		return
	}
	dir, err := os.MkdirTemp("", "wharf-sdk-test-")
	if err != nil {
		panic(err)
	}
	exampleBin = filepath.Join(dir, "exampleprovider")
	cmd := exec.Command(goTool(), "build", "-o", exampleBin, "github.com/wharfhub/wharf/sdk/internal/exampleprovider")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		panic("build example provider: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// syncBuffer collects plugin stderr, written from go-plugin's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func checksum(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

func launch(t *testing.T, opts plugin.Options) *plugin.Client {
	t.Helper()
	if opts.Path == "" {
		opts.Path = exampleBin
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := plugin.Launch(ctx, opts)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	t.Cleanup(c.Kill)
	return c
}

func get(t *testing.T, c *plugin.Client, path string, hdr http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://provider"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	tr := c.Transport()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestLifecycle(t *testing.T) {
	ctx := t.Context()
	c := launch(t, plugin.Options{Checksum: checksum(t, exampleBin)})

	d, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "example" || d.Version != "v0.0.1" || d.Replicas != plugin.ReplicasSingle ||
		!d.HasUI || !d.HasBackend || len(d.CRDs) != 1 || len(d.PublicPaths) != 1 {
		t.Fatalf("unexpected descriptor: %+v", d)
	}
	var crd map[string]any
	if err := json.Unmarshal(d.CRDs[0], &crd); err != nil || crd["kind"] != "CustomResourceDefinition" {
		t.Fatalf("crd not JSON CRD: %v %s", err, d.CRDs[0])
	}

	dataDir := t.TempDir()
	err = c.Start(ctx, plugin.Config{
		HubURL:         "https://hub.internal:6443",
		RestConfig:     plugin.RestConfig{Host: "https://hub.internal:6443", BearerToken: "provider-token"},
		DataDir:        dataDir,
		ProviderConfig: []byte("greeting: hello\n"),
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}

	fi, err := os.Stat(filepath.Dir(c.SocketPath()))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir: %v %v", fi.Mode(), err)
	}
	// The go-plugin control socket lives in the same private directory.
	entries, err := os.ReadDir(filepath.Dir(c.SocketPath()))
	if err != nil || len(entries) < 2 {
		t.Fatalf("socket dir entries: %v %v", entries, err)
	}

	code, body := get(t, c, "/services/config", nil)
	var cfg map[string]any
	if err := json.Unmarshal(body, &cfg); code != 200 || err != nil {
		t.Fatalf("config: %d %v %s", code, err, body)
	}
	want := map[string]any{"hubURL": "https://hub.internal:6443", "dataDir": dataDir, "greeting": "hello",
		"restHost": "https://hub.internal:6443", "restToken": "provider-token"}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("config %s = %v, want %v", k, cfg[k], v)
		}
	}

	code, body = get(t, c, "/services/whoami", http.Header{"X-Kedge-User": {"alice"}, "Authorization": {"Bearer t"}})
	if code != 200 || !strings.Contains(string(body), `"User":"alice"`) || !strings.Contains(string(body), "Bearer t") {
		t.Fatalf("whoami: %d %s", code, body)
	}
	for _, path := range []string{"/ui/index.html", "/ui/app.js"} {
		code, body = get(t, c, path, nil)
		if code != 200 || len(body) == 0 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	if code, _ = get(t, c, "/elsewhere", nil); code != http.StatusNotFound {
		t.Fatalf("unrouted path: %d", code)
	}

	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := c.Health(ctx); !errors.Is(err, plugin.ErrUnhealthy) {
		t.Fatalf("health after stop: %v, want ErrUnhealthy", err)
	}
	pid := c.Pid()
	c.Kill()
	if !c.Exited() || processAlive(pid) {
		t.Fatalf("plugin %d still running after Kill", pid)
	}
	if _, err := os.Stat(filepath.Dir(c.SocketPath())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("private socket dir not removed: %v", err)
	}
}

func TestKillReachesProcessGroup(t *testing.T) {
	ctx := t.Context()
	c := launch(t, plugin.Options{})
	if err := c.Start(ctx, plugin.Config{ProviderConfig: []byte("child: true\nkeepChild: true\n")}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, c, "/services/config", nil)
	var cfg struct {
		ChildPID int `json:"childPID"`
	}
	if err := json.Unmarshal(body, &cfg); err != nil || cfg.ChildPID == 0 {
		t.Fatalf("no child pid: %v %s", err, body)
	}
	if !processAlive(cfg.ChildPID) {
		t.Fatal("child not running before kill")
	}
	pid := c.Pid()
	c.Kill()
	if processAlive(pid) {
		t.Fatalf("plugin %d alive after Kill", pid)
	}
	// SIGKILL is delivered asynchronously to the orphaned child; wait for
	// the outcome rather than assert on timing.
	waitGone(t, cfg.ChildPID)
}

func TestEnvironment(t *testing.T) {
	t.Setenv("WHARF_EXAMPLE_ENV", "hub")
	tests := []struct {
		name     string
		opts     plugin.Options
		wantEnv  string
		wantPath bool
	}{
		{name: "inherits hub env", wantEnv: "hub", wantPath: true},
		{name: "Env overrides hub env", opts: plugin.Options{Env: []string{"WHARF_EXAMPLE_ENV=plugin"}}, wantEnv: "plugin", wantPath: true},
		{name: "isolated", opts: plugin.Options{IsolateEnv: true}, wantEnv: ""},
		{name: "isolated with Env", opts: plugin.Options{IsolateEnv: true, Env: []string{"WHARF_EXAMPLE_ENV=only"}}, wantEnv: "only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := launch(t, tt.opts)
			if err := c.Start(t.Context(), plugin.Config{}); err != nil {
				t.Fatal(err)
			}
			_, body := get(t, c, "/services/config", nil)
			var cfg struct {
				Env  string `json:"env"`
				Path string `json:"path"`
			}
			if err := json.Unmarshal(body, &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.Env != tt.wantEnv || (cfg.Path != "") != tt.wantPath {
				t.Fatalf("plugin env = %q, PATH set %v; want %q, %v", cfg.Env, cfg.Path != "", tt.wantEnv, tt.wantPath)
			}
		})
	}
}
