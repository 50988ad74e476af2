package plugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// fakeHubEnv makes the test binary act as a hub: launch the example plugin
// (with a child of its own), print both pids, then wait to be killed.
const fakeHubEnv = "WHARF_SDK_TEST_FAKE_HUB"

func runFakeHub() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := plugin.Launch(ctx, plugin.Options{Path: os.Getenv(fakeHubEnv)})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if err := c.Start(ctx, plugin.Config{ProviderConfig: []byte("child: true\nkeepChild: true\n")}); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider/services/config", nil)
	resp, err := (&http.Client{Transport: c.Transport()}).Do(req)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var cfg struct {
		ChildPID int `json:"childPID"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&cfg)
	_ = resp.Body.Close()
	fmt.Println("pids", c.Pid(), cfg.ChildPID)
	// Block until the test kills us; stdin closing is the fallback so a
	// failed test never leaves this process behind.
	_, _ = io.Copy(io.Discard, os.Stdin)
	c.Kill()
}

// TestNoOrphansAfterHubKill9: kill -9 of the hub must take the plugin and
// everything it spawned along.
func TestNoOrphansAfterHubKill9(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeHubEnv+"="+exampleBin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close() }()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var line string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if line = sc.Text(); strings.HasPrefix(line, "pids ") || strings.HasPrefix(line, "error ") {
			break
		}
	}
	var pluginPID, childPID int
	if _, err := fmt.Sscanf(line, "pids %d %d", &pluginPID, &childPID); err != nil || pluginPID == 0 || childPID == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("fake hub said %q: %v", line, err)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pluginPID)
	waitGone(t, childPID)
}
