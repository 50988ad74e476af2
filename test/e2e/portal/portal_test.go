package portal

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// whoami is the part of /api/whoami the scenarios compare against.
type whoami struct {
	User string `json:"user"`
	Home struct {
		Path    string `json:"path"`
		Cluster string `json:"cluster"`
	} `json:"home"`
	Workspaces []struct {
		Path    string `json:"path"`
		Cluster string `json:"cluster"`
	} `json:"workspaces"`
}

func (w whoami) cluster(path string) string {
	for _, ws := range w.Workspaces {
		if ws.Path == path {
			return ws.Cluster
		}
	}
	return ""
}

// TestPortal walks a person through the portal in one browser, in the
// order a newcomer would: sign in from a deep link, look at their
// workspaces, create a child and switch to it, enable hello in the
// catalog, open its page, hard-refresh one of its sub-routes, let a
// hostile provider try to steal the session, see a broken provider's
// error, and sign out.
func TestPortal(t *testing.T) {
	env := startPortal(t)
	b := newBrowser(t, env)
	canaries := plantCanaries(t, b)
	hub := env.hub.URL

	// A deep link with a query and a fragment, opened signed out.
	deep := "/ui/catalog?view=all&sort=name#hello"
	b.do("open the deep link", chromedp.Navigate(hub+deep))
	b.waitState("signin")
	b.do("see the sign-in page", chromedp.WaitVisible(tid("signin-page")), chromedp.WaitVisible(tid("signin-oidc")))
	if got := b.location(); got != hub+deep {
		t.Fatalf("the sign-in page moved the URL to %s, want it to stay at %s", got, hub+deep)
	}
	b.shot("signin")

	t.Log("sign in through the IdP's login form")
	b.do("follow the sign-in link", chromedp.Click(tid("signin-oidc")), chromedp.WaitVisible(`input[name=username]`))
	b.do("fill the IdP form",
		chromedp.SendKeys(`input[name=username]`, person.Username),
		chromedp.SendKeys(`input[name=password]`, person.Password))
	b.shot("idp-login")
	b.do("submit the IdP form", chromedp.Click(`button[type=submit]`))
	b.waitState("ready")
	landed, err := url.Parse(b.location())
	if err != nil {
		t.Fatal(err)
	}
	if landed.Path != "/ui/catalog" || landed.Fragment != "hello" || landed.Query().Get("view") != "all" || landed.Query().Get("sort") != "name" {
		t.Fatalf("after sign-in the browser is at %s, want the deep link %s (query and fragment kept)", landed, deep)
	}
	who := eval[whoami](b, `fetch("/api/whoami").then(r => r.json())`)
	if who.Home.Path == "" {
		t.Fatalf("whoami of the signed-in person has no home: %+v", who)
	}
	if got := b.text(tid("user-name")); !strings.Contains(got, who.User) && !strings.Contains(got, person.Username) {
		t.Fatalf("the chrome names the user %q, want %q", got, who.User)
	}

	t.Log("the workspace tree starts at the home workspace")
	b.do("open the overview", chromedp.Click(tid("nav-overview")))
	b.waitText(tid("ws-current"), who.Home.Path, 30*time.Second)
	b.do("the home is current in the tree", chromedp.WaitVisible(tid("ws-tree-item", `[data-ws-path="`+who.Home.Path+`"][aria-current="page"]`)))
	b.waitText(tid("ws-cluster"), who.Home.Cluster, 30*time.Second)

	t.Log("create a child")
	child := who.Home.Path + ":team-a"
	b.do("open the create dialog", chromedp.WaitEnabled(tid("ws-create-open")), chromedp.Click(tid("ws-create-open")), chromedp.WaitVisible(tid("ws-create-dialog")))
	b.do("name the child", chromedp.SendKeys(tid("ws-create-name"), "team-a"))
	b.shot("create-dialog")
	b.do("create it", chromedp.Click(tid("ws-create-submit")), chromedp.WaitNotVisible(tid("ws-create-dialog")))
	// The dialog's "Open it when it is ready" is on by default.
	b.waitText(tid("ws-current"), child, 90*time.Second)

	t.Log("switch workspace with the switcher, back to the home")
	b.do("the child is in the switcher", chromedp.WaitReady(tid("ws-switcher")+` option[value="`+child+`"]`))
	if v := eval[string](b, `document.querySelector('[data-testid="ws-switcher"]').value`); v != child {
		t.Errorf("the switcher shows %q while the current workspace is %q", v, child)
	}
	eval[bool](b, `(() => { const s = document.querySelector('[data-testid="ws-switcher"]'); s.value = `+jsString(who.Home.Path)+`; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`)
	b.waitText(tid("ws-current"), who.Home.Path, 30*time.Second)
	b.waitText(tid("ws-child", `[data-ws-name="team-a"]`)+" "+tid("ws-child-phase"), "Ready", 90*time.Second)

	t.Log("switch workspace through the tree, to the child")
	b.do("click the child in the tree", chromedp.Click(tid("ws-tree-item", `[data-ws-path="`+child+`"]`)))
	b.waitText(tid("ws-current"), child, 30*time.Second)
	b.do("the child is current in the tree", chromedp.WaitVisible(tid("ws-tree-item", `[data-ws-path="`+child+`"][aria-current="page"]`)))
	if v := eval[string](b, `document.querySelector('[data-testid="ws-switcher"]').value`); v != child {
		t.Errorf("the switcher shows %q while the current workspace is %q", v, child)
	}
	if u, _ := url.Parse(b.location()); u.Query().Get("ws") != child {
		t.Fatalf("after switching the URL is %s, want ?ws=%s", u, child)
	}
	if v := cookieValue(b, "__Host-wharf_workspace"); v != child && v != url.QueryEscape(child) {
		t.Fatalf("workspace cookie is %q, want %q", v, child)
	}
	b.shot("workspace-tree")

	t.Log("enable providers in the catalog")
	b.do("open the catalog", chromedp.Click(tid("nav-catalog")), chromedp.WaitVisible(tid("catalog-table")))
	for _, p := range []string{"hello", "portalprobe", "portalnodefine"} {
		row := tid("catalog-row", `[data-provider="`+p+`"]`)
		b.waitText(row+" "+tid("catalog-ready"), "Ready", 90*time.Second)
	}
	b.do("the catalog is live", chromedp.WaitVisible(tid("catalog-live", `[data-live="true"]`)))
	b.shot("catalog")
	for _, p := range []string{"hello", "portalprobe", "portalnodefine"} {
		row := tid("catalog-row", `[data-provider="`+p+`"]`)
		b.do("enable "+p, chromedp.Click(row+" "+tid("provider-enable")))
		b.waitText(row+" "+tid("catalog-enabled"), "Enabled", 60*time.Second)
	}
	b.shot("catalog-enabled")

	t.Run("hello page shows whoami", func(t *testing.T) {
		b := b.in(t)
		b.do("open hello", chromedp.WaitVisible(tid("nav-provider", `[data-provider="hello"]`)), chromedp.Click(tid("nav-provider", `[data-provider="hello"]`)))
		b.do("hello is mounted in the child", chromedp.WaitVisible(tid("provider-panel", `[data-provider="hello"][data-ws-path="`+child+`"]`)))
		// What the backend proxy told hello's backend, as its element shows
		// it (in its shadow root).
		fields := helloFields(t, b, child)
		if fields["user"] != who.User || fields["workspace"] != child || fields["cluster"] == "" {
			t.Fatalf("hello shows %v, want user %q, workspace %q and its cluster", fields, who.User, child)
		}
		b.shot("hello")
	})

	t.Run("hard refresh of a provider sub-route", func(t *testing.T) {
		b := b.in(t)
		sub := "/ui/providers/hello/about?ws=" + url.QueryEscape(child) + "&q=1#top"
		b.do("open the sub-route", chromedp.Navigate(hub+sub))
		b.waitState("ready")
		b.do("hard refresh", chromedp.Reload())
		b.waitState("ready")
		b.do("hello is mounted", chromedp.WaitVisible(tid("provider-panel", `[data-provider="hello"][data-ws-path="`+child+`"]`)+" wharf-provider-hello"))
		if got := b.location(); got != hub+sub {
			t.Fatalf("after a hard refresh the browser is at %s, want %s", got, hub+sub)
		}
		eventually(t, 30*time.Second, func() error {
			sr := eval[string](b, `(() => { const e = document.querySelector("wharf-provider-hello"); return e && e.context ? e.context.subRoute : ""; })()`)
			h2 := eval[string](b, `(() => { const e = document.querySelector("wharf-provider-hello"); const h = e && e.shadowRoot && e.shadowRoot.querySelector("h2"); return h ? h.textContent : ""; })()`)
			if sr != "/about" || h2 != "About this sample" {
				return fmt.Errorf("after the refresh hello has subRoute %q and heading %q, want /about and its About page", sr, h2)
			}
			return nil
		})
		b.shot("hello-subroute")
	})

	t.Run("narrow screen and dark mode", func(t *testing.T) {
		checkNarrowAndDark(t, b.in(t), hub, child)
	})

	t.Run("keyboard only", func(t *testing.T) {
		checkKeyboard(t, b.in(t), hub, child)
	})

	t.Run("hostile provider finds nothing", func(t *testing.T) {
		checkProbe(t, b.in(t), env, who, child, canaries)
	})

	t.Run("provider that never defines itself", func(t *testing.T) {
		b := b.in(t)
		b.do("open portalnodefine", chromedp.Navigate(hub+"/ui/providers/portalnodefine/?ws="+url.QueryEscape(child)))
		b.waitState("ready")
		// The shell's real limit is 5 s; wait well past it.
		b.waitText(tid("provider-error"), "did not define itself", 60*time.Second)
		if !eval[bool](b, `document.documentElement.dataset.portalnodefineLoaded === "true"`) {
			t.Fatal("the error shows, but the script never ran: this tests a load failure, not a missing define")
		}
		b.shot("provider-error")
	})

	t.Run("a workspace open to everyone, not in whoami's list, opens; a missing one says so", func(t *testing.T) {
		b := b.in(t)
		shared := "root:shared-r5"
		adminPost(t, env, "/apis/tenancy.wharf.dev/v1alpha1/workspaces", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"shared-r5"}}`)
		eventually(t, 60*time.Second, func() error {
			return adminPostErr(env, "/clusters/"+shared+"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
				`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"everyone"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"wharf:workspace-access"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:authenticated"}]}`)
		})
		// whoami lists what names the caller (review 5, #11), so the
		// shell asks the workspace itself.
		eventually(t, 30*time.Second, func() error {
			if code := eval[int](b, `fetch("/clusters/`+shared+`/api").then(r => r.status)`); code != 200 {
				return fmt.Errorf("discovery in %s: %d", shared, code)
			}
			return nil
		})
		if w := eval[whoami](b, `fetch("/api/whoami").then(r => r.json())`); strings.Contains(fmt.Sprint(w), shared) {
			t.Errorf("whoami lists %s: %+v", shared, w)
		}
		b.do("open it", chromedp.Navigate(hub+"/ui/?ws="+url.QueryEscape(shared)))
		b.waitState("ready")
		b.do("its overview shows", chromedp.WaitVisible(tid("ws-children")))
		b.waitText(tid("ws-current"), shared, 30*time.Second)
		missing := "root:missing-r5"
		b.do("open a missing one", chromedp.Navigate(hub+"/ui/?ws="+url.QueryEscape(missing)))
		b.waitState("ready")
		b.do("it says so", chromedp.WaitVisible(tid("ws-missing")))
		b.waitText(tid("ws-current"), missing, 30*time.Second)
	})

	t.Log("sign out")
	session := cookieValue(b, "__Host-wharf_session")
	b.do("sign out", chromedp.Click(tid("signout")))
	b.waitState("signin")
	if code := eval[int](b, `fetch("/api/whoami").then(r => r.status)`); code != 401 {
		t.Fatalf("after sign-out /api/whoami answers %d, want 401", code)
	}
	if v := cookieValue(b, "__Host-wharf_session"); v != "" {
		t.Fatal("the session cookie is still in the browser after sign-out")
	}
	if code := getWithCookie(t, env, "/api/whoami", session); code != 401 {
		t.Fatalf("the signed-out session cookie, replayed, gets %d from /api/whoami, want 401", code)
	}
	b.shot("signed-out")

	t.Run("a 401 right after a sign-in shows the error page, not a loop", func(t *testing.T) {
		b := b.in(t)
		// Start signing in, give up at the IdP, and come back: the shell
		// sees a 401 on a sign-in it just started and must stop there.
		b.do("start signing in", chromedp.Click(tid("signin-oidc")), chromedp.WaitVisible(`input[name=username]`))
		b.do("come back without signing in", chromedp.Navigate(hub+deep))
		b.waitState("error")
		b.do("the error page offers a retry", chromedp.WaitVisible(tid("error-page")), chromedp.WaitVisible(tid("error-retry")))
		if msg := b.text(tid("error-message")); msg == "" {
			t.Error("the error page has no message")
		}
		if got := b.location(); got != hub+deep {
			t.Errorf("the error page moved the URL to %s, want it to stay at %s", got, hub+deep)
		}
		b.shot("error-page")
	})
}

// cookieValue is the browser's cookie name for the hub, "" if none.
func cookieValue(b *browser, name string) string {
	for _, c := range b.cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// helloFields waits for hello's element to show the /whoami answer in
// workspace ws and returns its fields (user, groups, workspace, cluster).
func helloFields(t *testing.T, b *browser, ws string) map[string]string {
	t.Helper()
	var fields map[string]string
	eventually(t, 60*time.Second, func() error {
		fields = eval[map[string]string](b, `(() => {
			const e = document.querySelector("wharf-provider-hello");
			const out = {};
			if (!e || !e.shadowRoot) return out;
			for (const dd of e.shadowRoot.querySelectorAll("[data-testid=hello-whoami] dd[data-field]")) out[dd.dataset.field] = dd.textContent;
			return out;
		})()`)
		if fields["workspace"] != ws {
			return fmt.Errorf("hello shows %v, want workspace %s", fields, ws)
		}
		return nil
	})
	return fields
}

// adminPost posts body to path with the hub's admin token.
func adminPost(t *testing.T, env *portalEnv, path, body string) {
	t.Helper()
	if err := adminPostErr(env, path, body); err != nil {
		t.Fatal(err)
	}
}

// adminPostErr posts body to path with the hub's admin token; 201 and
// 409 are success.
func adminPostErr(env *portalEnv, path, body string) error {
	hc, err := env.hub.Client()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, env.hub.URL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+env.hub.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("POST %s: %d %.300s", path, resp.StatusCode, b)
	}
	return nil
}
