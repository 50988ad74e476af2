package hub

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/idp"
)

// cliProc is a running `wharf login`; the test reads its stderr line by
// line to find the URL a person would open.
type cliProc struct {
	cmd    *exec.Cmd
	lines  chan string
	out    *testutil.Buffer // stdout and stderr, for leak checks and failures
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

func startCLI(t *testing.T, args ...string) *cliProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c := &cliProc{lines: make(chan string, 100), out: &testutil.Buffer{}, done: make(chan struct{}), cancel: cancel}
	c.cmd = exec.CommandContext(ctx, wharfBinary(t), args...)
	c.cmd.Stdout = c.out
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			fmt.Fprintln(c.out, s.Text())
			select {
			case c.lines <- s.Text():
			default:
			}
		}
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
		if t.Failed() {
			t.Logf("wharf %s output:\n%s", strings.Join(args, " "), c.out.String())
		}
	})
	return c
}

// line waits for a stderr line starting with prefix and returns the rest.
func (c *cliProc) line(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case l := <-c.lines:
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return strings.TrimSpace(rest)
			}
		case <-c.done:
			t.Fatalf("wharf exited (%v) before printing %q:\n%s", c.err, prefix, c.out.String())
		case <-timeout:
			t.Fatalf("wharf printed no %q line:\n%s", prefix, c.out.String())
		}
	}
}

// wait returns the process's exit error.
func (c *cliProc) wait() error {
	<-c.done
	return c.err
}

// browser is a person's browser: a cookie jar, trusting the IdP's CA,
// following every redirect (to the CLI's loopback listener at the end).
func browser(t *testing.T, p *idp.IdP) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// cacheEntry is a token cache file of the CLI.
type cacheEntry struct {
	IDToken      string    `json:"id_token"`
	RefreshToken string    `json:"refresh_token"`
	Expiry       time.Time `json:"expiry"`
}

// readCache returns the single entry in dir.
func readCache(t *testing.T, dir string) (cacheEntry, string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("token cache %s holds %v, want one entry", dir, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e, files[0]
}
