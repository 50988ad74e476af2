package hub

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/home"
)

// Issue 24, break B1 (per-tenant side): one tenant filled the store with
// 1 MB ConfigMaps, 300 child workspaces and 500 kB Events, all accepted.
// Now every workspace and every tenant (a home tree) has hub-set ceilings
// on objects, bytes and workspaces (hub/quota), reached here at test
// scale: a refusal is 403 "exceeded quota" in kube-apiserver's words, and
// the victim tenant's writes keep working. Only hub administrators may
// change a ceiling (quota.wharf.dev/ annotations), by any write path.

// quotaTokens: mallory fills bytes, trudy workspaces, eve tries to raise
// her ceilings, ed floods events, alice is the victim.
const quotaTokens = `alice-token,alice,alice-uid,""
mallory-token,mallory,mallory-uid,""
trudy-token,trudy,trudy-uid,""
eve-token,eve,eve-uid,""
ed-token,ed,ed-uid,""
hubadmin-token,hubadmin,hubadmin-uid,""
`

// Ceilings of the quota hub, small enough to reach in seconds: a
// workspace holds two 900 kB ConfigMaps, a tenant three; a workspace three
// children, a tenant five workspaces.
var quotaHubArgs = []string{
	"--max-workspace-bytes=2500000", "--max-tenant-bytes=3000000",
	"--max-child-workspaces=3", "--max-tenant-workspaces=5",
	// Ten events, then one every ten seconds: a flood of 25 meets the
	// bound however slow the machine.
	"--max-workspace-event-qps=0.1", "--max-workspace-event-burst=10",
}

const bigValue = 900_000

func bigConfigMap(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"k":%q}}`, name, strings.Repeat("x", bigValue))
}

func bigEvent(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":%q},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Big","message":%q,"type":"Normal"}`,
		name, strings.Repeat("x", bigValue))
}

func childWS(name string) string {
	return fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q}}`, name)
}

func startQuotaHub(t *testing.T) *attackEnv {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(quotaTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--token-auth-file", tokens, "--admin-user", "hubadmin"}, quotaHubArgs...)
	h := startHub(t, hubOptions{extraArgs: args})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{
		"alice": "alice-token", "mallory": "mallory-token", "trudy": "trudy-token", "eve": "eve-token", "ed": "ed-token", "hubadmin": "hubadmin-token", "admin": h.Token,
	}}
	for _, who := range []string{"alice", "mallory", "trudy", "eve", "ed"} {
		if _, code, body := h.whoamiAs(e.tokens[who]); code != http.StatusOK {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"] = string(home.PathOf(who))
	}
	return e
}

// quotaRow is one attack on the quota hub.
type quotaRow struct {
	name string
	run  func(t *testing.T, e *attackEnv)
}

// req sends one request and returns its status and body.
func (e *attackEnv) req(who, method, path, ctype, body string) (int, string) {
	return e.send(step{as: who, method: method, path: path, ctype: ctype, body: body}, e.vars)
}

// mustReq fails the test unless the answer is want (and holds has).
func (e *attackEnv) mustReq(t *testing.T, want int, has, who, method, path, ctype, body string) string {
	t.Helper()
	code, b := e.req(who, method, path, ctype, body)
	if code != want || !strings.Contains(b, has) {
		if len(b) > 2000 {
			b = b[:2000]
		}
		t.Fatalf("%s %s as %s: got %d, want %d with %q:\n%s", method, expand(path, e.vars), who, code, want, has, b)
	}
	return b
}

// fillUntilRefused creates objects until the first refusal and returns
// how many were admitted and the refusal's body; more than limit
// admissions fail the test.
func fillUntilRefused(t *testing.T, e *attackEnv, who, path string, body func(i int) string, limit int) (int, string) {
	t.Helper()
	for i := 0; ; i++ {
		code, b := e.req(who, http.MethodPost, path, "", body(i))
		switch {
		case code == http.StatusCreated && i < limit:
			continue
		case code == http.StatusCreated:
			t.Fatalf("%d objects admitted at %s, the ceiling should have refused one by now", i+1, path)
		case code == http.StatusForbidden:
			return i, b
		default:
			t.Fatalf("create %d at %s: %d %s", i, path, code, b)
		}
	}
}

var quotaRows = []quotaRow{
	{name: "B1 large ConfigMaps stop at the workspace, then the tenant ceiling; the victim still writes", run: func(t *testing.T, e *attackEnv) {
		cms := "/clusters/{malloryHome}/api/v1/namespaces/default/configmaps"
		n, body := fillUntilRefused(t, e, "mallory", cms, func(i int) string { return bigConfigMap(fmt.Sprintf("big-%d", i)) }, 3)
		if n != 2 || !strings.Contains(body, `configmaps \"big-2\" is forbidden: exceeded quota: wharf-workspace-limits, requested: storage/bytes=`) ||
			!strings.Contains(body, `"reason":"Forbidden"`) || !strings.Contains(body, "limited: storage/bytes=2500000") {
			t.Fatalf("after %d ConfigMaps: %s", n, body)
		}
		// The tenant spans her tree: a child workspace's room ends at the
		// tenant's ceiling.
		e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, "/clusters/{malloryHome}"+wsAPI, "", childWS("more"))
		n, body = fillUntilRefused(t, e, "mallory", "/clusters/{malloryHome}:more/api/v1/namespaces/default/configmaps",
			func(i int) string { return bigConfigMap(fmt.Sprintf("big-%d", i)) }, 2)
		if n != 1 || !strings.Contains(body, "exceeded quota: wharf-tenant-limits, requested: storage/bytes=") || !strings.Contains(body, "limited: storage/bytes=3000000") {
			t.Fatalf("after %d ConfigMaps in the child: %s", n, body)
		}
		// Large events count toward the same bytes; events.k8s.io notes
		// are bounded by kube's 1 kB validation besides.
		e.mustReq(t, http.StatusForbidden, "exceeded quota: wharf-", "mallory", http.MethodPost, "/clusters/{malloryHome}/api/v1/namespaces/default/events", "", bigEvent("big"))
		e.mustReq(t, http.StatusUnprocessableEntity, "can have at most 1024 characters", "mallory", http.MethodPost, "/clusters/{malloryHome}/apis/events.k8s.io/v1/namespaces/default/events", "",
			fmt.Sprintf(`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"big2"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"x/y","reportingInstance":"i","action":"A","reason":"Big","note":%q,"type":"Normal","regarding":{"kind":"ConfigMap","namespace":"default","name":"x"}}`, strings.Repeat("x", bigValue)))
		// Growing an existing object is refused; shrinking it and
		// deleting are not, and free room again.
		e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, cms, "", `{"metadata":{"name":"small"},"data":{"k":"v"}}`)
		e.mustReq(t, http.StatusForbidden, "exceeded quota: wharf-", "mallory", http.MethodPatch, cms+"/small", "application/merge-patch+json",
			fmt.Sprintf(`{"data":{"k":%q}}`, strings.Repeat("y", bigValue)))
		e.mustReq(t, http.StatusForbidden, "exceeded quota: wharf-", "mallory", http.MethodPatch, cms+"/small?fieldManager=m&force=true", "application/apply-patch+yaml",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"small"},"data":{"k":%q}}`, strings.Repeat("y", bigValue)))
		e.mustReq(t, http.StatusOK, "", "mallory", http.MethodPatch, cms+"/big-0", "application/merge-patch+json", `{"data":{"k":"shrunk"}}`)
		e.mustReq(t, http.StatusOK, "", "mallory", http.MethodDelete, cms+"/big-1", "", "")
		e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, cms, "", bigConfigMap("again"))
		// The victim, another tenant, is not affected.
		for i := 0; i < 2; i++ {
			e.mustReq(t, http.StatusCreated, "", "alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", "", bigConfigMap(fmt.Sprintf("v-%d", i)))
		}
		e.mustReq(t, http.StatusCreated, "", "alice", http.MethodPost, "/clusters/{aliceHome}"+wsAPI, "", childWS("fine"))
		// Her usage is visible to her, against the ceilings; not to
		// another tenant.
		usage := e.mustReq(t, http.StatusOK, `"tenant":{"name":"root:users:mallory-`, "mallory", http.MethodGet, "/clusters/{malloryHome}/api/usage", "", "")
		if !strings.Contains(usage, `"limits":{"objects":200000,"bytes":3000000,"workspaces":5}`) || !strings.Contains(usage, `"limits":{"objects":50000,"bytes":2500000,"workspaces":3}`) {
			t.Fatalf("usage report: %s", usage)
		}
		e.mustReq(t, http.StatusForbidden, "", "alice", http.MethodGet, "/clusters/{malloryHome}/api/usage", "", "")
		// Root, which every person may discover (/api/*), keeps its usage
		// to hub admins (outside review row 6: it answered 200).
		e.mustReq(t, http.StatusForbidden, "", "mallory", http.MethodGet, "/clusters/root/api/usage", "", "")
	}},
	{name: "B1 child workspaces stop at the workspace, then the tenant ceiling", run: func(t *testing.T, e *attackEnv) {
		n, body := fillUntilRefused(t, e, "trudy", "/clusters/{trudyHome}"+wsAPI, func(i int) string { return childWS(fmt.Sprintf("c%d", i)) }, 4)
		if n != 3 || !strings.Contains(body, `workspaces.tenancy.wharf.dev \"c3\" is forbidden: exceeded quota: wharf-workspace-limits, requested: count/workspaces.tenancy.wharf.dev=1, used: count/workspaces.tenancy.wharf.dev=3, limited: count/workspaces.tenancy.wharf.dev=3`) {
			t.Fatalf("after %d children: %s", n, body)
		}
		n, body = fillUntilRefused(t, e, "trudy", "/clusters/{trudyHome}:c0"+wsAPI, func(i int) string { return childWS(fmt.Sprintf("d%d", i)) }, 3)
		if n != 2 || !strings.Contains(body, "exceeded quota: wharf-tenant-limits, requested: count/workspaces.tenancy.wharf.dev=1, used: count/workspaces.tenancy.wharf.dev=5, limited: count/workspaces.tenancy.wharf.dev=5") {
			t.Fatalf("after %d grandchildren: %s", n, body)
		}
		// Server-side apply creates too, and is refused the same way.
		e.mustReq(t, http.StatusForbidden, "exceeded quota: wharf-", "trudy", http.MethodPatch, "/clusters/{trudyHome}"+wsAPI+"/applied?fieldManager=m", "application/apply-patch+yaml", childWS("applied"))
		// The refused names are free: nothing half-made was left.
		e.mustReq(t, http.StatusNotFound, "", "trudy", http.MethodGet, "/clusters/{trudyHome}"+wsAPI+"/c3", "", "")
		e.mustReq(t, http.StatusNotFound, "", "hubadmin", http.MethodGet, "/clusters/{trudyHome}:c3/api/v1/namespaces", "", "")
		// Deleting one makes room for one.
		e.mustReq(t, http.StatusOK, "", "trudy", http.MethodDelete, "/clusters/{trudyHome}:c0"+wsAPI+"/d1", "", "")
		if err := waitFor(60*time.Second, func() error {
			code, b := e.req("trudy", http.MethodPost, "/clusters/{trudyHome}:c0"+wsAPI, "", childWS("d9"))
			if code != http.StatusCreated {
				return fmt.Errorf("%d %s", code, b)
			}
			return nil
		}); err != nil {
			t.Fatalf("after deleting a workspace: %v", err)
		}
		e.mustReq(t, http.StatusCreated, "", "alice", http.MethodPost, "/clusters/{aliceHome}"+wsAPI, "", childWS("fine2"))
	}},
	{name: "a workspace admin cannot raise her ceilings by any write path", run: func(t *testing.T, e *attackEnv) {
		ws := "/clusters/{eveHome}" + wsAPI
		raise := `{"quota.wharf.dev/max-child-workspaces":"1000","quota.wharf.dev/max-tenant-bytes":"99999999999"}`
		created := fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"g","annotations":%s}}`, raise)
		const denied = "annotations are set by hub administrators only"
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPost, ws, "", created)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPost, ws+"?dryRun=All", "", created)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g?fieldManager=m", "application/apply-patch+yaml", created)
		e.mustReq(t, http.StatusCreated, "", "eve", http.MethodPost, ws, "", childWS("g"))
		patch := fmt.Sprintf(`{"metadata":{"annotations":%s}}`, raise)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g", "application/merge-patch+json", patch)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g?dryRun=All", "application/merge-patch+json", patch)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g", "application/strategic-merge-patch+json", patch)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g", "application/json-patch+json",
			`[{"op":"add","path":"/metadata/annotations","value":{"quota.wharf.dev/max-objects":"1000000"}}]`)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g?fieldManager=m&force=true", "application/apply-patch+yaml", created)
		cur := e.mustReq(t, http.StatusOK, "", "eve", http.MethodGet, ws+"/g", "", "")
		put := strings.Replace(cur, `"metadata":{`, `"metadata":{"annotations":{"quota.wharf.dev/max-bytes":"99999999999"},`, 1)
		if strings.Contains(cur, `"annotations":{`) {
			put = strings.Replace(cur, `"annotations":{`, `"annotations":{"quota.wharf.dev/max-bytes":"99999999999",`, 1)
		}
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPut, ws+"/g", "", put)
		// A hub administrator may set one; it takes effect, and the
		// workspace admin can neither change nor remove it.
		e.mustReq(t, http.StatusOK, "", "hubadmin", http.MethodPatch, ws+"/g", "application/merge-patch+json", `{"metadata":{"annotations":{"quota.wharf.dev/max-child-workspaces":"1"}}}`)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g", "application/merge-patch+json", `{"metadata":{"annotations":{"quota.wharf.dev/max-child-workspaces":null}}}`)
		e.mustReq(t, http.StatusForbidden, denied, "eve", http.MethodPatch, ws+"/g", "application/merge-patch+json", `{"metadata":{"annotations":{"quota.wharf.dev/max-child-workspaces":"2"}}}`)
		e.mustReq(t, http.StatusCreated, "", "eve", http.MethodPost, "/clusters/{eveHome}:g"+wsAPI, "", childWS("h0"))
		// The sixth review's W9: the homes' owner annotation is the
		// hub's too, on every write path.
		owner := `{"wharf.dev/home-owner":"victor"}`
		const ownerDenied = "the wharf.dev/home-owner annotation is set by the hub only"
		e.mustReq(t, http.StatusForbidden, ownerDenied, "eve", http.MethodPost, ws, "",
			fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"o","annotations":%s}}`, owner))
		e.mustReq(t, http.StatusForbidden, ownerDenied, "eve", http.MethodPatch, ws+"/g", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"annotations":%s}}`, owner))
		e.mustReq(t, http.StatusForbidden, ownerDenied, "eve", http.MethodPatch, ws+"/g?dryRun=All", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"annotations":%s}}`, owner))
		e.mustReq(t, http.StatusForbidden, ownerDenied, "eve", http.MethodPatch, ws+"/o?fieldManager=m", "application/apply-patch+yaml",
			fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"o","annotations":%s}}`, owner))
		if err := waitFor(60*time.Second, func() error {
			code, b := e.req("eve", http.MethodPost, "/clusters/{eveHome}:g"+wsAPI, "", childWS("h1"))
			if code == http.StatusCreated {
				e.req("eve", http.MethodDelete, "/clusters/{eveHome}:g"+wsAPI+"/h1", "", "")
				return fmt.Errorf("the override is not in force yet")
			}
			if code != http.StatusForbidden || !strings.Contains(b, "limited: count/workspaces.tenancy.wharf.dev=1") {
				return fmt.Errorf("%d %s", code, b)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}},
}

func init() {
	quotaRows = append(quotaRows, quotaRow{name: "B1 an event flood is bounded per workspace; the victim's events are not", run: func(t *testing.T, e *attackEnv) {
		ok, limited := 0, 0
		for i := 0; i < 25; i++ {
			code, b := e.req("ed", http.MethodPost, "/clusters/{edHome}/api/v1/namespaces/default/events", "",
				fmt.Sprintf(`{"metadata":{"name":"flood-%d"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Flood","message":"m","type":"Normal"}`, i))
			switch {
			case code == http.StatusCreated:
				ok++
			case code == http.StatusTooManyRequests && strings.Contains(b, "limit reached on type Workspace for key "):
				limited++
			default:
				t.Fatalf("event %d: %d %s", i, code, b)
			}
		}
		if ok > 12 || limited < 13 {
			t.Fatalf("%d events admitted, %d limited: the bound (burst 10) did not hold", ok, limited)
		}
		e.mustReq(t, http.StatusTooManyRequests, "limit reached", "ed", http.MethodPost, "/clusters/{edHome}/apis/events.k8s.io/v1/namespaces/default/events", "",
			`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"flood-v1"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"x/y","reportingInstance":"i","action":"A","reason":"Flood","type":"Normal","regarding":{"kind":"ConfigMap","namespace":"default","name":"x"}}`)
		for i := 0; i < 3; i++ {
			e.mustReq(t, http.StatusCreated, "", "alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/events", "",
				fmt.Sprintf(`{"metadata":{"name":"fine-%d"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Fine","message":"m","type":"Normal"}`, i))
		}
	}})
}

func init() {
	quotaRows = append(quotaRows, quotaRow{name: "B1 counting survives a restart", run: func(t *testing.T, e *attackEnv) {
		cms := "/clusters/{malloryHome}/api/v1/namespaces/default/configmaps"
		if n, body := fillUntilRefused(t, e, "mallory", cms, func(i int) string { return bigConfigMap(fmt.Sprintf("last-%d", i)) }, 2); !strings.Contains(body, "exceeded quota: wharf-") {
			t.Fatalf("after %d more: %s", n, body)
		}
		e.h.restart()
		e.mustReq(t, http.StatusForbidden, "exceeded quota: wharf-", "mallory", http.MethodPost, cms, "", bigConfigMap("after-restart"))
		e.mustReq(t, http.StatusForbidden, "exceeded quota: wharf-", "trudy", http.MethodPost, "/clusters/{trudyHome}"+wsAPI, "", childWS("after-restart"))
		e.mustReq(t, http.StatusCreated, "", "alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", "", `{"metadata":{"name":"after-restart"}}`)
	}})
}

// TestAttackLimitsQuota runs the quota rows against a hub of their own
// (small ceilings by flag).
func TestAttackLimitsQuota(t *testing.T) {
	t.Parallel()
	e := startQuotaHub(t)
	for _, row := range quotaRows {
		t.Run(row.name, func(t *testing.T) { row.run(t, e) })
	}
}
