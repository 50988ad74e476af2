package portal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// canaries are values planted where the probe says it looks; finding
// them proves it really looks there, so "found no secret" means something.
type canaries struct{ cookie, local, session, global string }

// plantCanaries makes every new document of the tab start with a
// script-readable cookie, local and session storage items and a global,
// each with a random value. The script runs through the DevTools
// protocol before the page's own scripts.
func plantCanaries(t *testing.T, b *browser) canaries {
	t.Helper()
	r := make([]byte, 8)
	_, _ = rand.Read(r)
	n := hex.EncodeToString(r)
	c := canaries{cookie: "cookie-" + n, local: "local-" + n, session: "session-" + n, global: "global-" + n}
	src := `window.__wharfProbeCanary = ` + jsString(c.global) + `;
try {
  localStorage.setItem("probe-canary", ` + jsString(c.local) + `);
  sessionStorage.setItem("probe-canary", ` + jsString(c.session) + `);
  document.cookie = "probe_canary=` + c.cookie + `; path=/; secure; samesite=strict";
} catch (e) { /* opaque origins (about:blank) have no storage */ }`
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		t.Fatalf("planting canaries: %v", err)
	}
	return c
}

// probeReport is what the portalprobe element wrote into the page.
type probeReport struct {
	Cookie         string            `json:"cookie"`
	LocalStorage   map[string]string `json:"localStorage"`
	SessionStorage map[string]string `json:"sessionStorage"`
	Globals        map[string]string `json:"globals"`
	DOM            string            `json:"dom"`
	Context        map[string]any    `json:"context"`
	API            map[string]string `json:"api"`
	AuthSession    struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	} `json:"authSession"`
	APIFetch  probeFetch `json:"apiFetch"`
	APIPost   probeFetch `json:"apiPost"`
	PlainPost probeFetch `json:"plainPost"`
	Seen      []struct {
		Where, Name, Value string
	} `json:"seenHeaders"`
}

type probeFetch struct {
	Status     int                 `json:"status"`
	BackendSaw map[string][]string `json:"backendSaw"`
	Error      string              `json:"error"`
}

// checkProbe opens the hostile provider's page and checks that it found
// the canaries but neither the session cookie, nor the CSRF token, nor
// any Authorization header; and that the hub kept both from its backend.
func checkProbe(t *testing.T, b *browser, env *portalEnv, who whoami, ws string, c canaries) {
	session := cookieValue(b, "__Host-wharf_session")
	if session == "" {
		t.Fatal("no session cookie in the browser")
	}
	csrf := csrfFor(t, env, session)
	// ws may be newer than the whoami the scenario started with.
	b.do("back to the portal", chromedp.Navigate(env.hub.URL+"/ui/?ws="+url.QueryEscape(ws)))
	b.waitState("ready")
	who = eval[whoami](b, `fetch("/api/whoami").then(r => r.json())`)

	b.do("open portalprobe", chromedp.Navigate(env.hub.URL+"/ui/providers/portalprobe/?ws="+url.QueryEscape(ws)))
	b.waitState("ready")
	b.do("wait for the probe's report", chromedp.WaitReady(tid("probe-report")))
	raw := get(b, "read the report", chromedp.TextContent(tid("probe-report")))
	b.shot("probe")
	var rep probeReport
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatalf("probe report: %v\n%s", err, raw)
	}

	// The probe looks where it says it looks.
	if !strings.Contains(rep.Cookie, c.cookie) || rep.LocalStorage["probe-canary"] != c.local ||
		rep.SessionStorage["probe-canary"] != c.session || rep.Globals["__wharfProbeCanary"] != c.global {
		t.Fatalf("the probe missed a planted canary (so its empty findings prove nothing): cookie %q, local %v, session %v, global %q",
			rep.Cookie, rep.LocalStorage, rep.SessionStorage, rep.Globals["__wharfProbeCanary"])
	}
	// ... and finds no secret anywhere it looked.
	for what, secret := range map[string]string{"the session cookie": session, "the CSRF token": csrf} {
		if strings.Contains(raw, secret) {
			t.Errorf("the hostile provider read %s: it appears in its report", what)
		}
	}
	if strings.Contains(rep.Cookie, "wharf_session") {
		t.Errorf("document.cookie shows the session cookie's name: %q", rep.Cookie)
	}
	var sess map[string]any
	if err := json.Unmarshal([]byte(rep.AuthSession.Body), &sess); err == nil && sess["csrfToken"] != nil && sess["csrfToken"] != "" {
		t.Errorf("/auth/session gave a page script the CSRF token")
	}
	for _, h := range rep.Seen {
		if strings.EqualFold(h.Name, "Authorization") || strings.EqualFold(h.Name, "X-Wharf-CSRF") || strings.Contains(strings.ToLower(h.Value), "bearer") {
			t.Errorf("the provider's fetch/XHR/Headers wrappers saw %s: %s=%q", h.Where, h.Name, h.Value)
		}
	}

	// What the shell hands the element: the documented context, working api.
	for k, want := range map[string]string{"user": who.User, "workspace": ws, "cluster": who.cluster(ws), "basePath": "/ui/providers/portalprobe"} {
		if got, _ := rep.Context[k].(string); strings.TrimSuffix(got, "/") != want {
			t.Errorf("context.%s = %q, want %q", k, got, want)
		}
	}
	if rep.APIFetch.Status != http.StatusOK || rep.APIPost.Status != http.StatusOK {
		t.Errorf("api.fetch to the provider's own backend: GET %d %s, POST %d %s; want 200 both",
			rep.APIFetch.Status, rep.APIFetch.Error, rep.APIPost.Status, rep.APIPost.Error)
	}
	if rep.PlainPost.Status != http.StatusForbidden {
		t.Errorf("a provider's own POST without the shell got %d %s, want 403 (no CSRF token)", rep.PlainPost.Status, rep.PlainPost.Error)
	}
	// The hub strips the session cookie, the CSRF header and identity
	// spoofing before its backend sees the request; it asserts identity.
	for _, f := range []probeFetch{rep.APIFetch, rep.APIPost} {
		for name, vals := range f.BackendSaw {
			ln := strings.ToLower(name)
			if ln == "authorization" || ln == "x-wharf-csrf" {
				t.Errorf("the provider's backend received %s", name)
			}
			if ln == "cookie" {
				for _, v := range vals {
					if strings.Contains(v, "wharf_session") || strings.Contains(v, "wharf_login") {
						t.Errorf("the provider's backend received the cookie %s", v)
					}
				}
			}
		}
		if u := f.BackendSaw["X-Kedge-User"]; len(u) != 1 || u[0] != who.User {
			t.Errorf("the backend saw X-Kedge-User %v, want [%s]", u, who.User)
		}
	}
	if t.Failed() {
		t.Logf("probe report: %s", raw)
	}
}

// csrfFor asks /auth/session for the CSRF token of session the way only
// the shell's own document may (no Fetch Metadata: not a page script).
func csrfFor(t *testing.T, env *portalEnv, session string) string {
	t.Helper()
	hc, err := env.hub.Client()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, env.hub.URL+"/auth/session", nil)
	req.AddCookie(&http.Cookie{Name: "__Host-wharf_session", Value: session})
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		CSRF string `json:"csrfToken"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &s); err != nil || s.CSRF == "" {
		t.Fatalf("/auth/session with the session cookie: %d %s", resp.StatusCode, body)
	}
	return s.CSRF
}

// getWithCookie GETs path with only the session cookie and returns the code.
func getWithCookie(t *testing.T, env *portalEnv, path, session string) int {
	t.Helper()
	hc, err := env.hub.Client()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, env.hub.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: "__Host-wharf_session", Value: session})
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
