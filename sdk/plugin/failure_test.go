package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/wharfhub/wharf/sdk/plugin"
)

func TestLaunchRefused(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    plugin.Options
		wantErr error
		wantMsg string
		stderr  string
	}{
		{name: "wrong checksum", opts: plugin.Options{Path: exampleBin, Checksum: make([]byte, 32)},
			wantErr: goplugin.ErrChecksumsDoNotMatch},
		{name: "crash before handshake", opts: plugin.Options{Path: exampleBin, Env: []string{"WHARF_EXAMPLE_CRASH=early"}},
			wantMsg: "remote plugin", stderr: "crashing early"},
		{name: "not a plugin", opts: plugin.Options{Path: "/bin/true"}, wantMsg: "remote plugin"},
		{name: "missing binary", opts: plugin.Options{Path: filepath.Join(open, "nope")}, wantMsg: "nope"},
		{name: "socket dir not private", opts: plugin.Options{Path: exampleBin, SocketDir: open}, wantMsg: "want 0700"},
		{name: "empty path", opts: plugin.Options{}, wantMsg: "empty plugin path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr syncBuffer
			tt.opts.Stderr = &stderr
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			c, err := plugin.Launch(ctx, tt.opts)
			if err == nil {
				c.Kill()
				t.Fatal("launch succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantMsg)
			}
			if tt.stderr != "" && !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// A plugin dying inside an RPC must surface as an error on that RPC and on
// the next health ping, never as a hang.
func TestCrashDuringStart(t *testing.T) {
	ctx := t.Context()
	c := launch(t, plugin.Options{})
	err := c.Start(ctx, plugin.Config{ProviderConfig: []byte("crash: start\n")})
	if err == nil {
		t.Fatal("start succeeded though the plugin exited")
	}
	err = c.Health(ctx)
	if err == nil || errors.Is(err, plugin.ErrUnhealthy) {
		t.Fatalf("health after crash = %v, want a transport error", err)
	}
	c.Kill()
	if !c.Exited() {
		t.Fatal("not exited")
	}
}

func TestParseChecksum(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	tests := []struct {
		in      string
		wantErr bool
	}{
		{in: hex},
		{in: "sha256:" + hex},
		{in: " sha256:" + hex + " "},
		{in: "sha256:abc", wantErr: true},
		{in: "zz", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		b, err := plugin.ParseChecksum(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseChecksum(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
		if err == nil && len(b) != 32 {
			t.Errorf("ParseChecksum(%q) = %d bytes", tt.in, len(b))
		}
	}
}
