package kube

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunBuildScript covers the outcomes of waiting on the tools build with
// stand-in scripts: a directory printed, a failure, and a build that outlives
// the test's deadline and is left to finish in the background.
func TestRunBuildScript(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		giveUp   time.Duration // 0: no deadline
		want     string
		wantErr  string
		progress string
	}{
		{
			name:     "prints directory last",
			script:   "echo building >&2\necho /cache/old\necho /cache/abc\n",
			want:     "/cache/abc",
			progress: "building",
		},
		{name: "failure", script: "echo boom >&2\nexit 3\n", wantErr: "exit status 3", progress: "boom"},
		{name: "no output", script: "true\n", wantErr: "printed no directory"},
		{
			name:     "outlives the deadline",
			script:   "echo slow >&2\nsleep 3\necho /cache/late\n",
			giveUp:   200 * time.Millisecond,
			wantErr:  "still building",
			progress: "slow",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "build.sh")
			if err := os.WriteFile(script, []byte(tc.script), 0o755); err != nil {
				t.Fatal(err)
			}
			var giveUp time.Time
			if tc.giveUp > 0 {
				giveUp = time.Now().Add(tc.giveUp)
			}
			var progress bytes.Buffer
			got, err := runBuildScript(script, giveUp, &progress, t.TempDir())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("runBuildScript = %q, %v; want %q", got, err, tc.want)
			}
			if !strings.Contains(progress.String(), tc.progress) {
				t.Fatalf("progress %q lacks %q", progress.String(), tc.progress)
			}
		})
	}
}
