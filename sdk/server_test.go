package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// hooked records its lifecycle hooks.
type hooked struct {
	startErr, healthErr error
	started, stopped    int
	hc                  sdk.HubConfig
}

var (
	_ sdk.Starter       = (*hooked)(nil)
	_ sdk.Stopper       = (*hooked)(nil)
	_ sdk.HealthChecker = (*hooked)(nil)
)

func (h *hooked) Manifest() sdk.Manifest {
	return sdk.Manifest{Name: "hooked", Backend: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hc, _ := sdk.HubConfigFrom(r.Context())
		_, _ = io.WriteString(w, r.URL.Path+" "+hc.HubURL)
	})}
}

func (h *hooked) Start(_ context.Context, hc sdk.HubConfig) error {
	h.started++
	h.hc = hc
	return h.startErr
}
func (h *hooked) Stop(context.Context) error    { h.stopped++; return nil }
func (h *hooked) Healthy(context.Context) error { return h.healthErr }

func socketIn(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wharf-sdk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "s.sock")
}

func TestServerLifecycle(t *testing.T) {
	ctx := context.Background()
	p := &hooked{}
	srv := sdk.NewServer(p)
	if err := srv.Health(ctx); err == nil {
		t.Fatal("healthy before start")
	}
	sock := socketIn(t, 0o700)
	cfg := &plugin.Config{HubURL: "https://hub", SocketPath: sock, RestConfig: plugin.RestConfig{Host: "https://hub", BearerToken: "p"}}
	if err := srv.Start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx, cfg); err == nil {
		t.Fatal("second start succeeded")
	}
	if p.started != 1 || p.hc.RestConfig == nil || p.hc.RestConfig.BearerToken != "p" {
		t.Fatalf("start hook: %d %+v", p.started, p.hc)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi, err)
	}

	tr := plugin.NewSocketTransport(sock)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://provider/services/a/b")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "/a/b https://hub" {
		t.Fatalf("backend saw %q", body)
	}

	if err := srv.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}
	p.healthErr = errors.New("db gone")
	if err := srv.Health(ctx); err == nil || !strings.Contains(err.Error(), "db gone") {
		t.Fatalf("health = %v, want the hook's error", err)
	}
	tr.CloseIdleConnections()
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(ctx); err != nil || p.stopped != 1 {
		t.Fatalf("second stop: %v, stop hook ran %d times", err, p.stopped)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestServerStartRefused(t *testing.T) {
	tests := []struct {
		name    string
		sock    func(t *testing.T) string
		hookErr error
		wantErr string
	}{
		{name: "group-readable dir", sock: func(t *testing.T) string { return socketIn(t, 0o750) }, wantErr: "0700"},
		{name: "relative path", sock: func(*testing.T) string { return "rel.sock" }, wantErr: "absolute"},
		{name: "missing dir", sock: func(*testing.T) string { return "/nonexistent-wharf/s.sock" }, wantErr: "socket dir"},
		{name: "start hook fails", sock: func(t *testing.T) string { return socketIn(t, 0o700) }, hookErr: errors.New("boom"), wantErr: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &hooked{startErr: tt.hookErr}
			err := sdk.NewServer(p).Start(context.Background(), &plugin.Config{SocketPath: tt.sock(t)})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Start = %v, want error containing %q", err, tt.wantErr)
			}
			if tt.hookErr != nil && !errors.Is(err, tt.hookErr) {
				t.Fatalf("hook error not wrapped: %v", err)
			}
		})
	}
}
