package portal

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/wharfhub/wharf/test/testutil"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// browser is one headless chromium with one tab.
type browser struct {
	t      *testing.T
	ctx    context.Context
	shots  string
	nshot  int
	parent *browser // set by in; console and numbering live there

	mu      sync.Mutex // guards console below
	console []string
}

// pin is a server chromium must trust: its URL and the CA that verifies it.
type pin struct{ url, caFile string }

// newBrowser is newBrowserFor the hub and the IdP of env.
func newBrowser(t *testing.T, env *portalEnv) *browser {
	t.Helper()
	return newBrowserFor(t, []pin{{env.hub.URL, env.hub.CAFile}, {env.idp.URL, env.idp.CAFile}})
}

// newBrowserFor starts chromium with a fresh profile that trusts only the
// given servers' certificates (each read over TLS verified with its CA).
func newBrowserFor(t *testing.T, servers []pin) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium is not installed at %s (.ci/run installs it): %v", chromiumPath, err)
	}
	var pins []string
	for _, s := range servers {
		pins = append(pins, spkiHash(t, s.url, s.caFile))
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // root in a container: no user namespaces for the sandbox
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Exactly the two test servers' keys; no --ignore-certificate-errors.
		chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(pins, ",")),
		chromedp.WindowSize(1280, 860),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, shots: artifactDir(t)}
	// The first Run starts chromium; it must not carry a timeout, or the
	// browser would die with it.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			b.log(m.String())
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			b.mu.Lock()
			t.Logf("browser console:\n%s", testutil.Tail(strings.Join(b.console, "\n"), 80))
			b.mu.Unlock()
		}
		cancelCtx()
		cancelAlloc()
	})
	return b
}

// in is the same tab reporting to a subtest's t, so a failure there ends
// the subtest only and the scenario goes on in the same browser.
func (b *browser) in(t *testing.T) *browser {
	return &browser{t: t, ctx: b.ctx, shots: b.shots, nshot: b.nshot, parent: b}
}

func (b *browser) log(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.console = append(b.console, s)
}

// do runs steps with a generous timeout; a failure fails the test with
// the page's URL and a screenshot of what was on screen.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v (at %s)", what, err, b.location())
	}
}

// get runs one action that returns a value, as do does.
func get[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v (at %s)", what, err, b.location())
	}
	return v
}

// location is the tab's current URL.
func (b *browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	u, _ := chromedp.Run(ctx, chromedp.Location())
	return u
}

// shot saves the window as <n>-<name>.png and logs its path.
func (b *browser) shot(name string) string {
	b.t.Helper()
	root := b
	for root.parent != nil {
		root = root.parent
	}
	root.nshot++
	b.nshot = root.nshot
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.nshot, name))
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
	return p
}

// tid is the CSS selector of a data-testid, with optional extra
// attribute selectors.
func tid(id string, extra ...string) string {
	return fmt.Sprintf(`[data-testid="%s"]%s`, id, strings.Join(extra, ""))
}

// waitState waits for the shell's whole-page state (loading, signin,
// error, ready).
func (b *browser) waitState(state string) {
	b.t.Helper()
	b.do("wait for state "+state, chromedp.WaitVisible(fmt.Sprintf(`html[data-wharf-state="%s"]`, state)))
}

// text is the textContent of the first match of sel, once visible.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(sel))
	return strings.TrimSpace(get(b, "read "+sel, chromedp.TextContent(sel)))
}

// waitText polls until the text of sel contains want.
func (b *browser) waitText(sel, want string, timeout time.Duration) string {
	b.t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		err := chromedp.Do(ctx, chromedp.WaitVisible(sel))
		if err == nil {
			var s string
			if s, err = chromedp.Run(ctx, chromedp.TextContent(sel)); err == nil {
				last = strings.TrimSpace(s)
			}
		}
		cancel()
		if err == nil && strings.Contains(last, want) {
			return last
		}
		if time.Now().After(deadline) {
			b.shot("failed-wait-text")
			b.t.Fatalf("%s reads %q, want it to contain %q (at %s)", sel, last, want, b.location())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// eval evaluates a JS expression in the page, awaiting a promise.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	return get(b, "eval "+expr, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// cookies are every cookie the browser holds for the page, HttpOnly ones
// included (read through the DevTools protocol, not the page).
func (b *browser) cookies() []*network.Cookie {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		b.t.Fatalf("reading cookies: %v", err)
	}
	return res.Cookies
}

func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", file)
	}
	return pool, nil
}
