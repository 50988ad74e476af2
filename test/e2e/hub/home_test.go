package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/home"
	"github.com/wharfhub/wharf/test/idp"
)

// homeTokens are static token users: two persons and one service-account
// identity, which gets no home.
const homeTokens = `dave-token,Dave.Smith@Example.com,dave-uid,"devs"
erin-token,erin,erin-uid,"devs"
frank-token,frank,frank-uid,"devs"
bot-token,system:serviceaccount:default:bot,bot-uid,"system:serviceaccounts,system:serviceaccounts:default"
`

// getInWorkspace sends a GET with a bearer token and the X-Wharf-Workspace
// header, which the backend proxy needs from callers without a home (the
// hub admin, service accounts).
func (h *hubProc) getInWorkspace(token, ws, path string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Wharf-Workspace", ws)
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(resp)
}

// whoamiAs calls GET /api/whoami with token.
func (h *hubProc) whoamiAs(token string) (home.WhoAmI, int, string) {
	h.t.Helper()
	return h.whoamiIn("", token)
}

// whoamiIn calls GET /clusters/<ws>/api/whoami ("" for none) with token.
func (h *hubProc) whoamiIn(ws, token string) (home.WhoAmI, int, string) {
	h.t.Helper()
	path := "/api/whoami"
	if ws != "" {
		path = "/clusters/" + ws + path
	}
	code, body := h.doAs(token, http.MethodGet, path, "")
	var w home.WhoAmI
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			h.t.Fatalf("whoami body %q: %v", body, err)
		}
	}
	return w, code, body
}

func paths(ws []home.Workspace) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Path)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestHomeWorkspaces: a person's first requests, 20 at once spread over
// two hub replicas sharing etcd, create exactly one home; its owner is
// admin there and nobody else gets in; service accounts and the hub admin
// get none.
func TestHomeWorkspaces(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(homeTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--token-auth-file", tokens}
	replicas := []*hubProc{
		startHub(t, hubOptions{etcdServers: endpoints, extraArgs: args}),
		startHub(t, hubOptions{etcdServers: endpoints, extraArgs: args}),
	}
	a := replicas[0]
	const dave = "Dave.Smith@Example.com"
	want := string(home.PathOf(dave))
	label := strings.TrimPrefix(want, string(home.UsersPath)+":")

	// 20 concurrent first requests, alternating between the replicas.
	start := time.Now()
	var wg sync.WaitGroup
	results := make([]home.WhoAmI, 20)
	codes := make([]int, 20)
	bodies := make([]string, 20)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], codes[i], bodies[i] = replicas[i%2].whoamiAs("dave-token")
		}(i)
	}
	wg.Wait()
	t.Logf("20 concurrent first requests over 2 replicas answered in %s", time.Since(start))
	var cluster string
	for i, w := range results {
		if codes[i] != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, codes[i], bodies[i])
		}
		if w.User != dave || w.Home == nil || w.Home.Path != want {
			t.Fatalf("request %d: whoami = %+v, want home %s", i, w, want)
		}
		if cluster == "" {
			cluster = w.Home.Cluster
		}
		if w.Home.Cluster != cluster {
			t.Errorf("request %d: home cluster %s, others saw %s", i, w.Home.Cluster, cluster)
		}
		if ps := paths(w.Workspaces); !contains(ps, want) || contains(ps, "root") || contains(ps, string(home.UsersPath)) {
			t.Errorf("request %d: accessible workspaces %v", i, paths(w.Workspaces))
		}
	}

	// Exactly one creation, one Workspace object and one index entry.
	logs := replicas[0].log.String() + replicas[1].log.String()
	if n := strings.Count(logs, `"Created home workspace" user="`+dave+`"`); n != 1 {
		t.Errorf("home created %d times according to the hub logs", n)
	}
	if got := a.mustKubectl(string(home.UsersPath), "get", "workspaces", "-o", "jsonpath={.items[*].metadata.name}"); got != label {
		t.Errorf("workspaces in %s = %q, want %q", home.UsersPath, got, label)
	}
	if got := a.mustKubectl(string(home.UsersPath), "get", "workspace", label, "-o", `jsonpath={.metadata.annotations.wharf\.dev/home-owner} {.status.cluster}`); got != dave+" "+cluster {
		t.Errorf("home workspace owner and cluster = %q", got)
	}
	if keys := keysWithPrefix(t, etcd, "/registry/wharf.dev/workspacepaths/"+string(home.UsersPath)+":"); len(keys) != 1 || !strings.HasSuffix(keys[0], ":"+label) {
		t.Errorf("index path keys under %s = %v", home.UsersPath, keys)
	}
	if ids := clustersWithPath(t, etcd, want); len(ids) != 1 || ids[0] != cluster {
		t.Errorf("logical clusters recorded for %s = %v, want [%s]", want, ids, cluster)
	}

	// dave owns the home; erin, another person, gets her own and nothing
	// of dave's.
	a.mustAs("dave", want, "auth", "can-i", "*", "*")
	a.mustAs("dave", cluster, "create", "configmap", "mine", "--from-literal=k=v")
	ew, code, body := a.whoamiAs("erin-token")
	if code != http.StatusOK || ew.Home == nil || ew.Home.Path != string(home.PathOf("erin")) || ew.Home.Path == want {
		t.Fatalf("erin whoami = %d %s", code, body)
	}
	if contains(paths(ew.Workspaces), want) {
		t.Errorf("erin may access dave's home: %v", paths(ew.Workspaces))
	}
	for _, target := range []string{want, cluster} {
		if code, body := a.doAs("erin-token", http.MethodGet, "/clusters/"+target+"/api/v1/namespaces/default/configmaps", ""); code != http.StatusForbidden {
			t.Errorf("erin reading dave's home %s = %d %s", target, code, body)
		}
	}
	// Not even the question: dave's home answers erin as a missing
	// workspace would (issue 11.9).
	if out, err := a.as("erin", want, "auth", "can-i", "get", "configmaps"); err == nil || !strings.Contains(out, "workspace access not permitted") {
		t.Errorf("erin can-i in dave's home: %v %s", err, out)
	}
	if out, err := a.as("erin", string(home.UsersPath), "get", "workspaces"); err == nil || !forbidden(out) {
		t.Errorf("erin listed the homes: %v %s", err, out)
	}

	// SelfSubjectReview carries the home in extra.
	out := a.mustAs("dave", "", "auth", "whoami", "-o", "json")
	var ssr struct {
		Status struct {
			UserInfo struct {
				Username string
				Extra    map[string][]string
			} `json:"userInfo"`
		}
	}
	if err := json.Unmarshal([]byte(out), &ssr); err != nil {
		t.Fatalf("kubectl auth whoami: %v\n%s", err, out)
	}
	if e := ssr.Status.UserInfo.Extra; ssr.Status.UserInfo.Username != dave || len(e["wharf.dev/home-workspace"]) != 1 ||
		e["wharf.dev/home-workspace"][0] != want || e["wharf.dev/home-cluster"][0] != cluster {
		t.Errorf("SelfSubjectReview = %+v", ssr.Status.UserInfo)
	}

	// No home for a service account or the hub administrator.
	bw, code, body := a.whoamiAs("bot-token")
	if code != http.StatusOK || bw.Home != nil || bw.User != "system:serviceaccount:default:bot" {
		t.Errorf("service account whoami = %d %s", code, body)
	}
	// A real hub-issued service-account token, minted by dave in his home
	// (where alone it is valid), gets no home of its own.
	a.mustAs("dave", want, "create", "serviceaccount", "ci", "-n", "default")
	saToken := a.mustAs("dave", want, "create", "token", "ci", "-n", "default")
	sw, code, body := a.whoamiIn(want, saToken)
	if code != http.StatusOK || sw.Home != nil || sw.User != "system:serviceaccount:default:ci" {
		t.Errorf("service-account token whoami = %d %s", code, body)
	}
	aw, code, body := a.whoamiAs(a.Token)
	if code != http.StatusOK || aw.Home != nil || !contains(paths(aw.Workspaces), "root") || !contains(paths(aw.Workspaces), want) {
		t.Errorf("admin whoami = %d %s", code, body)
	}
	got := strings.Fields(a.mustKubectl(string(home.UsersPath), "get", "workspaces", "-o", "jsonpath={.items[*].metadata.name}"))
	sort.Strings(got)
	wantHomes := []string{label, strings.TrimPrefix(string(home.PathOf("erin")), string(home.UsersPath)+":")}
	sort.Strings(wantHomes)
	if strings.Join(got, " ") != strings.Join(wantHomes, " ") {
		t.Errorf("homes = %v, want %v", got, wantHomes)
	}
	// A restarted replica finds the existing home; nothing is created again.
	created := `"Created home workspace" user="` + dave + `"`
	before := strings.Count(replicas[0].log.String(), created)
	replicas[1].restart()
	if w, code, body := replicas[1].whoamiAs("dave-token"); code != http.StatusOK || w.Home == nil || w.Home.Cluster != cluster {
		t.Errorf("whoami after restart = %d %s", code, body)
	}
	if n := strings.Count(replicas[0].log.String(), created) - before + strings.Count(replicas[1].log.String(), created); n != 0 {
		t.Errorf("home created %d more times after a restart", n)
	}

	// Only GET is served: others are refused by authorization or, for
	// someone allowed everything, by the handler; both as Status.
	for token, want := range map[string]int{"dave-token": http.StatusForbidden, a.Token: http.StatusMethodNotAllowed} {
		if code, body := a.doAs(token, http.MethodPost, "/api/whoami", "{}"); code != want || !strings.Contains(body, `"kind":"Status"`) {
			t.Errorf("POST whoami = %d %s, want %d", code, body, want)
		}
	}
}

// TestTokenLoginHome: /auth/token-login hands a person a kubeconfig for
// their home, creating it (the exchange is their first contact with the
// hub), and real kubectl works there with it.
func TestTokenLoginHome(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(homeTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens}})
	code, kubeconfig := h.doAs("frank-token", http.MethodPost, "/auth/token-login", "")
	want := h.URL + "/clusters/" + string(home.PathOf("frank"))
	if code != http.StatusOK || !strings.Contains(kubeconfig, "server: "+want+"\n") {
		t.Fatalf("token-login: %d %s, want server %s", code, kubeconfig, want)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"auth", "can-i", "create", "configmaps"}, {"create", "configmap", "hello", "--from-literal=a=b"}} {
		out, err := exec.Command(h.kubectlBin, append([]string{"--kubeconfig", path}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v with the token-login kubeconfig: %v\n%s", args, err, out)
		}
	}
}

// clustersWithPath returns the logical cluster ids whose index record names
// path.
func clustersWithPath(t *testing.T, c *clientv3.Client, path string) []string {
	t.Helper()
	prefix := "/registry/wharf.dev/logicalclusters/"
	resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, kv := range resp.Kvs {
		var rec struct{ Path string }
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			t.Fatalf("record %s: %v", kv.Key, err)
		}
		if rec.Path == path {
			ids = append(ids, strings.TrimPrefix(string(kv.Key), prefix))
		}
	}
	return ids
}

// TestOIDCHomeWorkspace: a person authenticated by a real OpenID Provider
// gets a home on their first request, like a static-token user.
func TestOIDCHomeWorkspace(t *testing.T) {
	t.Parallel()
	p := idp.Start(t)
	h := startHub(t, hubOptions{extraArgs: []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile, "--oidc-username-prefix=oidc:",
	}})
	token := p.Sign(t, p.Claims("wharf", nil))
	// Discovery runs in the background after start.
	var w home.WhoAmI
	eventually(t, 30*time.Second, func() error {
		var code int
		var body string
		if w, code, body = h.whoamiAs(token); code != http.StatusOK {
			return fmt.Errorf("whoami with ID token: %d %s", code, body)
		}
		return nil
	})
	want := string(home.PathOf("oidc:ada@example.com"))
	if w.User != "oidc:ada@example.com" || w.Home == nil || w.Home.Path != want || !contains(paths(w.Workspaces), want) {
		t.Fatalf("whoami = %+v, want home %s", w, want)
	}
	h.mustKubectl(want, "--token", token, "auth", "can-i", "create", "configmaps")
}
