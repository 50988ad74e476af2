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

// Issue 24, "1. Quotas": a workspace admin bounds what may be created in
// her namespaces with kube's ResourceQuota (object counts), enforced on
// every create path, reported in status.used, shown by kubectl describe;
// the quota lives in its workspace only. On main the hub served no
// resourcequotas at all, so the first kubectl apply of this row fails.

const rqTokens = `alice-token,alice,alice-uid,""
bob-token,bob,bob-uid,""
hubadmin-token,hubadmin,hubadmin-uid,""
`

const rqQuota = `apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: team}
spec:
  hard: {count/configmaps: "2"}
`

func TestAttackLimitsResourceQuota(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(rqTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens, "--admin-user", "hubadmin"}})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{
		"alice": "alice-token", "bob": "bob-token", "hubadmin": "hubadmin-token",
	}}
	for _, who := range []string{"alice", "bob"} {
		if _, code, body := h.whoamiAs(e.tokens[who]); code != http.StatusOK {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"] = string(home.PathOf(who))
	}
	alice, bob := e.vars["aliceHome"], e.vars["bobHome"]
	as := func(who, ws string, args ...string) (string, error) {
		return h.kubectl(ws, append([]string{"--token", e.tokens[who]}, args...)...)
	}
	mustAs := func(who, ws string, args ...string) string {
		t.Helper()
		out, err := as(who, ws, args...)
		if err != nil {
			t.Fatalf("kubectl %v as %s in %s: %v\n%s", args, who, ws, err, out)
		}
		return out
	}
	applyAs := func(who, ws, manifest string, args ...string) (string, error) {
		return h.applyStdin(ws, manifest, append([]string{"--token", e.tokens[who]}, args...)...)
	}
	for _, ws := range []struct{ who, path string }{{"alice", alice}, {"bob", bob}} {
		mustAs(ws.who, ws.path, "create", "namespace", "team")
	}
	if out, err := applyAs("alice", alice, rqQuota, "apply"); err != nil {
		t.Fatalf("creating the quota: %v\n%s", err, out)
	}
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: team}\ndata: {k: v}\n", name)
	}
	mustAs("alice", alice, "-n", "team", "create", "configmap", "a")
	// A dry run is checked but not charged: used stays 1.
	mustAs("alice", alice, "-n", "team", "create", "configmap", "dry", "--dry-run=server")
	if got := mustAs("alice", alice, "-n", "team", "get", "quota", "q", "-o", "json"); !strings.Contains(got, `"used": {
            "count/configmaps": "1"`) {
		t.Fatalf("after one create and a dry run:\n%s", got)
	}
	mustAs("alice", alice, "-n", "team", "create", "configmap", "b")
	const refusal = `configmaps "c" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2`
	out, err := as("alice", alice, "-n", "team", "create", "configmap", "c")
	if err == nil || !strings.Contains(out, refusal) {
		t.Fatalf("third ConfigMap: %v\n%s", err, out)
	}
	// The raw answer is kube's: 403 Forbidden Status.
	code, body := e.req("alice", http.MethodPost, "/clusters/"+alice+"/api/v1/namespaces/team/configmaps", "", `{"metadata":{"name":"c"}}`)
	if code != http.StatusForbidden || !strings.Contains(body, `"reason":"Forbidden"`) || !strings.Contains(body, strings.ReplaceAll(refusal, `"`, `\"`)) {
		t.Fatalf("third ConfigMap, raw: %d %s", code, body)
	}
	// Server-side apply that creates, and a dry-run create, are refused
	// alike; a hub administrator is not exempt.
	if out, err := applyAs("alice", alice, cm("c"), "apply", "--server-side"); err == nil || !strings.Contains(out, refusal) {
		t.Fatalf("server-side apply: %v\n%s", err, out)
	}
	if out, err := as("alice", alice, "-n", "team", "create", "configmap", "c", "--dry-run=server"); err == nil || !strings.Contains(out, refusal) {
		t.Fatalf("dry-run create: %v\n%s", err, out)
	}
	if out, err := as("hubadmin", alice, "-n", "team", "create", "configmap", "c"); err == nil || !strings.Contains(out, refusal) {
		t.Fatalf("hub admin: %v\n%s", err, out)
	}
	// Updates are never refused.
	mustAs("alice", alice, "-n", "team", "label", "configmap", "a", "x=y")
	// kubectl describe and get show used against hard.
	desc := mustAs("alice", alice, "-n", "team", "describe", "quota", "q")
	if !strings.Contains(desc, "Resource          Used  Hard") || !strings.Contains(desc, "count/configmaps  2     2") {
		t.Fatalf("describe quota:\n%s", desc)
	}
	if got := mustAs("alice", alice, "-n", "team", "get", "quota"); strings.Join(strings.Fields(strings.SplitN(got, "\n", 2)[0]), " ") != "NAME REQUEST LIMIT AGE" || !strings.Contains(got, "count/configmaps: 2/2") {
		t.Fatalf("get quota:\n%s", got)
	}
	// A delete frees room: the controller recounts, then a create passes.
	mustAs("alice", alice, "-n", "team", "delete", "configmap", "a")
	if err := waitFor(60*time.Second, func() error {
		out, err := as("alice", alice, "-n", "team", "create", "configmap", "c")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
	if out, err := as("alice", alice, "-n", "team", "create", "configmap", "d"); err == nil || !strings.Contains(out, `configmaps "d" is forbidden: exceeded quota: q`) {
		t.Fatalf("create after refill: %v\n%s", err, out)
	}
	// Another tenant's workspace, same namespace name, is unaffected and
	// does not see the quota.
	for i := 0; i < 4; i++ {
		mustAs("bob", bob, "-n", "team", "create", "configmap", fmt.Sprintf("b%d", i))
	}
	if got := mustAs("bob", bob, "-n", "team", "get", "quota", "-o", "name"); got != "" {
		t.Fatalf("bob sees quotas: %q", got)
	}
	if out, err := as("hubadmin", bob, "-n", "team", "get", "quota", "q"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("the quota is visible in another workspace: %v\n%s", err, out)
	}
	// Another namespace of her own workspace is unaffected too.
	mustAs("alice", alice, "create", "namespace", "other")
	for i := 0; i < 3; i++ {
		mustAs("alice", alice, "-n", "other", "create", "configmap", fmt.Sprintf("o%d", i))
	}

	// Custom resources (CRDs are hub-wide, made by the hub's admin) are
	// counted by count/<plural>.<group>.
	h.mustApply("", openCRD("example.com", "widgets", "Widget"), "apply")
	h.mustKubectl("", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	if out, err := applyAs("alice", alice, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: w, namespace: team}\nspec:\n  hard: {count/widgets.example.com: \"1\"}\n", "apply"); err != nil {
		t.Fatalf("widget quota: %v\n%s", err, out)
	}
	widget := func(name string) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: %s, namespace: team}\n", name)
	}
	if err := waitFor(60*time.Second, func() error {
		out, err := applyAs("alice", alice, widget("w1"), "create")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}); err != nil {
		t.Fatalf("first widget: %v", err)
	}
	if out, err := applyAs("alice", alice, widget("w2"), "create"); err == nil ||
		!strings.Contains(out, `widgets.example.com "w2" is forbidden: exceeded quota: w, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1`) {
		t.Fatalf("second widget: %v\n%s", err, out)
	}
}
