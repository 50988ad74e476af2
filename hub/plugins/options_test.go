package plugins

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseProvider(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	dir := t.TempDir()
	at := filepath.Join(dir, "v@1")
	if err := os.Symlink(exampleBin, at); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in       string
		wantName string
		wantPath string
		wantSum  bool
		wantErr  string
	}{
		{in: "example=" + exampleBin, wantName: "example", wantPath: exampleBin},
		{in: "example=" + exampleBin + "@sha256:" + hex, wantName: "example", wantPath: exampleBin, wantSum: true},
		{in: "example=" + at, wantName: "example", wantPath: at},
		{in: "example=" + exampleBin + "@sha256:abc", wantErr: "checksum"},
		{in: "example", wantErr: "want name=path"},
		{in: "=" + exampleBin, wantErr: "want name=path"},
		{in: "example=", wantErr: "want name=path"},
		{in: "Bad_Name=" + exampleBin, wantErr: "name"},
		{in: "example=" + filepath.Join(dir, "nope"), wantErr: "no such file"},
		{in: "example=" + dir, wantErr: "not an executable"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := ParseProvider(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tt.wantName || s.Path != tt.wantPath || (len(s.Checksum) == 32) != tt.wantSum {
				t.Fatalf("got %+v", s)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "example.yaml")
	if err := os.WriteFile(cfgFile, []byte("greeting: hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "none"},
		{name: "provider and config", args: []string{"--provider", "example=" + exampleBin, "--provider-config", "example=" + cfgFile}},
		{name: "dir allows unknown config names", args: []string{"--provider-dir", dir, "--provider-config", "later=" + cfgFile}},
		{name: "duplicate provider", args: []string{"--provider", "example=" + exampleBin, "--provider", "example=" + secondBin},
			wantErr: []string{"name given twice"}},
		{name: "config for unknown provider", args: []string{"--provider-config", "ghost=" + cfgFile},
			wantErr: []string{"no --provider of that name"}},
		{name: "unreadable config", args: []string{"--provider", "example=" + exampleBin, "--provider-config", "example=" + filepath.Join(dir, "nope")},
			wantErr: []string{"no such file"}},
		{name: "bad config flag", args: []string{"--provider-config", "example"}, wantErr: []string{"want name=file"}},
		{name: "missing dir", args: []string{"--provider-dir", filepath.Join(dir, "nope")}, wantErr: []string{"--provider-dir"}},
		{name: "zero interval", args: []string{"--provider-health-interval", "0s"}, wantErr: []string{"--provider-health-interval"}},
		{name: "all errors at once", args: []string{"--provider", "x", "--provider-config", "y", "--provider-start-timeout", "-1s"},
			wantErr: []string{"want name=path", "want name=file", "--provider-start-timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var msgs bytes.Buffer
			for _, err := range o.Validate() {
				msgs.WriteString(err.Error() + "\n")
			}
			if len(tt.wantErr) == 0 && msgs.Len() > 0 {
				t.Fatalf("unexpected errors:\n%s", msgs.String())
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(msgs.String(), w) {
					t.Errorf("errors lack %q:\n%s", w, msgs.String())
				}
			}
		})
	}
}

func TestProviderFlagsKeepCommas(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--provider", "a=/x,y", "--provider", "b=/z"}); err != nil {
		t.Fatal(err)
	}
	if len(o.Providers) != 2 || o.Providers[0] != "a=/x,y" {
		t.Fatalf("providers = %q", o.Providers)
	}
	if o.Supervision.HealthInterval != 10*time.Second {
		t.Fatalf("default health interval = %s", o.Supervision.HealthInterval)
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt int
		ceiling time.Duration
	}{
		{0, time.Second}, {1, 2 * time.Second}, {4, 16 * time.Second},
		{5, 30 * time.Second}, {40, 30 * time.Second}, {1000, 30 * time.Second},
	}
	for _, tt := range tests {
		for range 200 {
			if d := backoff(tt.attempt, time.Second, 30*time.Second); d < 0 || d > tt.ceiling {
				t.Fatalf("backoff(%d) = %s, want within [0, %s]", tt.attempt, d, tt.ceiling)
			}
		}
	}
}
