package portal

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wharfhub/wharf/test/sshd"
	"github.com/wharfhub/wharf/test/testutil"
)

// TestEdgesPage signs in with the development token form, enables the
// real edges provider, creates a server edge on its page, runs the join
// command the page shows with the real wharf-agent in front of a real
// sshd, and waits for the page to show the edge connected, live.
func TestEdgesPage(t *testing.T) {
	const token = "alice-portal-token"
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",alice,alice-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testutil.StartHub(t, testutil.HubOptions{Args: []string{
		"--token-auth-file", tokens, "--enable-token-login",
		"--provider", "edges=" + testutil.Binary(t, "wharf-provider-edges"),
	}})
	b := newBrowserFor(t, []pin{{h.URL, h.CAFile}})

	t.Log("sign in with the token form")
	b.do("open the portal", chromedp.Navigate(h.URL+"/ui/"))
	b.waitState("signin")
	b.do("type the token", chromedp.WaitVisible(tid("signin-token-form")), chromedp.SendKeys(tid("signin-token-input"), token))
	b.shot("token-signin")
	b.do("submit", chromedp.Click(tid("signin-token-submit")))
	b.waitState("ready")
	who := eval[whoami](b, `fetch("/api/whoami").then(r => r.json())`)
	home := who.Home.Path
	if who.User != "alice" || home == "" {
		t.Fatalf("signed in as %+v, want alice with a home", who)
	}
	q := "?ws=" + url.QueryEscape(home)

	t.Log("enable edges and create a server edge on its page")
	b.do("open the catalog", chromedp.Navigate(h.URL+"/ui/catalog"+q))
	b.waitState("ready")
	row := tid("catalog-row", `[data-provider="edges"]`)
	b.waitText(row+" "+tid("catalog-ready"), "Ready", 90*time.Second)
	b.do("enable edges", chromedp.Click(row+" "+tid("provider-enable")))
	b.waitText(row+" "+tid("catalog-enabled"), "Enabled", 60*time.Second)
	b.do("open edges from the sidebar", chromedp.WaitVisible(tid("nav-provider", `[data-provider="edges"]`)), chromedp.Click(tid("nav-provider", `[data-provider="edges"]`)))
	b.do("edges is mounted", chromedp.WaitVisible(tid("provider-panel", `[data-provider="edges"]`)+" wharf-provider-edges"))
	edgesShadow(t, b, 60*time.Second, `s.querySelector('[data-testid="edges-live"]') && s.querySelector('[data-testid="edges-live"]').textContent.includes("live")`)
	eval[bool](b, `(() => {
		const s = document.querySelector("wharf-provider-edges").shadowRoot;
		s.querySelector('[data-testid="edge-create-name"]').value = "web-1";
		s.querySelector('[data-testid="edge-create-type"]').value = "server";
		s.querySelector('[data-testid="edge-create-submit"]').click();
		return true;
	})()`)
	join := edgesShadow(t, b, 60*time.Second, `(() => { const p = s.querySelector('[data-testid="edge-row"][data-edge="web-1"] [data-testid="edge-join-command"]'); return p ? p.textContent : ""; })()`)
	bundle := joinBundle(t, join)
	if got := edgesShadow(t, b, 10*time.Second, `(() => { const p = s.querySelector('[data-testid="edge-row"][data-edge="web-1"] [data-testid="edge-ssh-command"]'); return p ? p.textContent : ""; })()`); got != "wharf ssh web-1 -w "+home {
		t.Errorf("the SSH command reads %q, want %q", got, "wharf ssh web-1 -w "+home)
	}

	t.Log("run the join command the page shows, in front of a real sshd")
	srv := sshd.Start(t)
	startAgent(t, bundle, srv.Addr)
	edgesShadow(t, b, 2*time.Minute, `(() => {
		const r = s.querySelector('[data-testid="edge-row"][data-edge="web-1"]');
		return r && r.querySelector('[data-testid="edge-phase"]').textContent === "Ready" &&
			r.querySelector('[data-testid="edge-connected"]').textContent === "Connected" &&
			r.querySelector('[data-testid="edge-agent"]').textContent !== "—";
	})()`)
	b.shot("edges")

	t.Run("after a hard refresh the page can still create edges", func(t *testing.T) {
		b := b.in(t)
		b.do("hard refresh", chromedp.Reload())
		b.waitState("ready")
		edgesShadow(t, b, 60*time.Second, `s.querySelector('[data-testid="edge-row"][data-edge="web-1"]') !== null`)
		eval[bool](b, `(() => {
			const s = document.querySelector("wharf-provider-edges").shadowRoot;
			s.querySelector('[data-testid="edge-create-name"]').value = "web-2";
			s.querySelector('[data-testid="edge-create-submit"]').click();
			return true;
		})()`)
		edgesShadow(t, b, 60*time.Second, `s.querySelector('[data-testid="edge-row"][data-edge="web-2"] [data-testid="edge-join-command"]') !== null`)
	})
}

// edgesShadow polls a JS expression over the edges element's shadow root
// (bound as s) until it is truthy, and returns it as a string.
func edgesShadow(t *testing.T, b *browser, timeout time.Duration, expr string) string {
	t.Helper()
	var out string
	eventually(t, timeout, func() error {
		v := eval[any](b, `(() => { const e = document.querySelector("wharf-provider-edges"); const s = e && e.shadowRoot; if (!s) return ""; return (`+expr+`) || ""; })()`)
		switch x := v.(type) {
		case string:
			out = x
		case bool:
			out = map[bool]string{true: "true"}[x]
		}
		if out == "" {
			return fmt.Errorf("%s is not yet true on the edges page", expr)
		}
		return nil
	})
	return out
}

// joinBundle is the --join argument of the agent line the page shows.
func joinBundle(t *testing.T, line string) string {
	t.Helper()
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--join" && strings.HasPrefix(f[i+1], "wharf-join-v1.") {
			return f[i+1]
		}
	}
	t.Fatalf("the join command %q has no --join wharf-join-v1.… bundle", line)
	return ""
}

// startAgent runs wharf-agent for a server edge until the test ends.
func startAgent(t *testing.T, bundle, sshAddr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &testutil.Buffer{}
	cmd := exec.CommandContext(ctx, testutil.Binary(t, "wharf-agent"), "run", "--join", bundle,
		"--state-dir", filepath.Join(t.TempDir(), "agent"), "--ssh-addr", sshAddr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("wharf-agent log:\n%s", testutil.Tail(log.String(), 60))
		}
	})
}
