package ha

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfhub/wharf/test/idp"
	"github.com/wharfhub/wharf/test/testutil"
)

// authURLPrefix starts the line `wharf login --no-browser` prints the
// IdP's authorization URL on (cmd/wharf/internal/login.AuthURLPrefix).
const authURLPrefix = "Open this URL in your browser to log in: "

// cliTools are the real binaries a CLI login runs.
type cliTools struct{ wharf, kubectl string }

// cliLogin is `wharf login` through the load balancer as a person runs
// it: the CLI asks the hub (/.well-known/wharf) for the issuer and client,
// prints the IdP URL (--no-browser), the person logs in at the IdP's form
// and is sent to the CLI's loopback listener; then real kubectl uses the
// written kubeconfig, whose exec plugin (`wharf credential`) hands it the
// cached ID token, and asks the hub who it is.
func (lg *logins) cliLogin(ctx context.Context, tools cliTools) error {
	dir, err := os.MkdirTemp("", "wharf-soak-cli")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	env := append(os.Environ(), "HOME="+dir, "KUBECACHEDIR="+filepath.Join(dir, "kubecache"))
	cmd := exec.CommandContext(ctx, tools.wharf, "login", lg.b.lb.URL,
		"--oidc-ca-file="+lg.b.idp.CAFile, "--certificate-authority="+lg.b.ca.CAFile,
		"--kubeconfig="+kubeconfig, "--cache-dir="+filepath.Join(dir, "cache"),
		"--no-browser", "--timeout=90s")
	cmd.Env = env
	out := &testutil.Buffer{}
	cmd.Stdout = out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting wharf login: %w", err)
	}
	// Every read of the pipe ends before Wait, as os/exec requires.
	urls, read := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
			if u, ok := strings.CutPrefix(sc.Text(), authURLPrefix); ok {
				select {
				case urls <- strings.TrimSpace(u):
				default:
				}
			}
		}
	}()
	wait := func() error {
		<-read
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("wharf login: %w: %s", err, testutil.Tail(out.String(), 5))
		}
		return nil
	}
	select {
	case u := <-urls:
		if err := loginAtIdP(ctx, lg.b.idp, u); err != nil {
			cancel()
			_ = wait()
			return err
		}
	case <-read:
		if err := wait(); err != nil {
			return err
		}
		return fmt.Errorf("wharf login printed no authorization URL: %s", testutil.Tail(out.String(), 5))
	}
	if err := wait(); err != nil {
		return err
	}
	kc := exec.CommandContext(ctx, tools.kubectl, "--kubeconfig", kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	kc.Env = env
	who, err := kc.CombinedOutput()
	if err != nil || strings.TrimSpace(string(who)) != soakUser.Email {
		return fmt.Errorf("kubectl auth whoami after wharf login: %q %v", testutil.Tail(string(who), 5), err)
	}
	return nil
}

// loginAtIdP plays the person at the browser: open the CLI's URL, log in
// at the IdP's form, follow the redirects to the CLI's loopback listener.
// The browser is a fresh one (its own pool), closed afterwards.
func loginAtIdP(ctx context.Context, p *bedIdP, authURL string) error {
	pool, err := poolOf(p.CAFile)
	if err != nil {
		return err
	}
	tr := &http.Transport{TLSClientConfig: tlsConfig(pool)}
	defer tr.CloseIdleConnections()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return fmt.Errorf("authorization URL: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("authorization URL: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		return fmt.Errorf("authorization URL answered %d at %s, want the IdP's login form", resp.StatusCode, resp.Request.URL.Redacted())
	}
	resp, err = idp.SubmitLogin(ctx, c, resp.Request.URL.String(), soakUser.Username, soakUser.Password)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/callback" || !strings.HasPrefix(resp.Request.URL.Host, "127.0.0.1:") {
		return fmt.Errorf("login ended at %d %s, want the CLI's loopback page", resp.StatusCode, resp.Request.URL.Redacted())
	}
	return nil
}
