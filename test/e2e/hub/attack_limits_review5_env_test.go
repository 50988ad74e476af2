package hub

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hub of the fifth outside review's rows (docs/reviews/
// issue-24-review-5.md): mallory attacks, victor is the victim, carol is
// another person whose home mallory may not see; hubadmin is an
// --admin-user and opsy is in the --admin-group platform. It runs the
// hello and resource-proxy providers, as the review's did (edges aside).

const review5Tokens = `mallory-token,mallory,mallory-uid,"devs"
victor-token,victor,victor-uid,"devs"
carol-token,carol,carol-uid,"devs"
hubadmin-token,hubadmin,hubadmin-uid,
opsy-token,opsy,opsy-uid,"platform"
`

// r5Secret is what victor keeps in his home; no answer to mallory may
// hold it.
const r5Secret = "victor-data-r5"

// startReview5Hub starts the hub and learns every person's home. The
// vars the oracle table's pairs name (oraclePairs: aliceHome, aliceID,
// carolHome, missingID) point at victor's home, its id and carol's home,
// so that its probes compare victor's hidden home with a missing one.
func startReview5Hub(t *testing.T) *attackEnv {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(review5Tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens,
		"--admin-user", "hubadmin", "--admin-group", "system:masters", "--admin-group", "platform",
		// Rows speak from addresses of their own with X-Forwarded-For.
		"--trusted-proxy-cidrs", "127.0.0.1/32,::1/128",
		"--provider", "hello=" + providerBinary(t, "./sdk/examples/hello", "hello"),
		"--provider", "resource-proxy=" + providerBinary(t, "./cmd/wharf-provider-resource-proxy", "resource-proxy"),
	}})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{"admin": h.Token}}
	for _, who := range []string{"hubadmin", "opsy", "mallory", "victor", "carol"} {
		e.tokens[who] = who + "-token"
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK || w.Home == nil {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"], e.vars[who+"ID"] = w.Home.Path, w.Home.Cluster
	}
	e.vars["aliceHome"], e.vars["aliceID"] = e.vars["victorHome"], e.vars["victorID"]
	e.vars["n"] = fmt.Sprint(time.Now().UnixNano())
	if err := missingID(e, e.vars); err != nil {
		t.Fatal(err)
	}
	mustAs(t, e, http.StatusCreated, "victor", http.MethodPost, cmPath("/clusters/"+e.vars["victorHome"]),
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victor-secret"},"data":{"k":"`+r5Secret+`"}}`)
	return e
}

// r5Missing is a fresh missing home-like path next to victor's:
// root:users:victor-<13 random base32 characters>, as the review drew.
func r5Missing() string {
	b := make([]byte, 13)
	_, _ = rand.Read(b)
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "root:users:victor-" + string(b)
}

// r5Victim runs victor's create, get, list and delete of small ConfigMaps
// in his home (the review's victim), n operations; it returns his
// failures.
func r5Victim(e *attackEnv, tag string, n int) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var failed []string
		ws := "/clusters/" + e.vars["victorHome"]
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("victim-%s-%d", tag, i/4)
			s := []step{
				{as: "victor", method: http.MethodPost, path: cmPath(ws), body: cmJSON(name), want: http.StatusCreated},
				{as: "victor", method: http.MethodGet, path: cmPath(ws) + "/" + name, want: http.StatusOK},
				{as: "victor", method: http.MethodGet, path: cmPath(ws) + "?limit=50", want: http.StatusOK},
				{as: "victor", method: http.MethodDelete, path: cmPath(ws) + "/" + name, want: http.StatusOK},
			}[i%4]
			if code, body := e.send(s, e.vars); code != s.want {
				failed = append(failed, fmt.Sprintf("%s %s: %d %.200s", s.method, s.path, code, body))
			}
		}
		out <- failed
	}()
	return out
}

// r5Step sends s and fails the test unless it answers want and its body
// holds has (when set) and none of hasNot.
func r5Step(t *testing.T, e *attackEnv, s step, hasNot ...string) string {
	t.Helper()
	code, body := e.send(s, e.vars)
	where := fmt.Sprintf("%s %s %v as %s", s.method, expand(s.path, e.vars), s.header, s.as)
	if s.want != 0 && code != s.want {
		t.Errorf("%s: %d, want %d: %.400s", where, code, s.want, body)
	}
	if s.has != "" && !strings.Contains(body, expand(s.has, e.vars)) {
		t.Errorf("%s: body lacks %q: %.400s", where, expand(s.has, e.vars), body)
	}
	for _, no := range append(hasNot, r5Secret) {
		if no != "" && strings.Contains(body, expand(no, e.vars)) {
			t.Errorf("%s: body holds %q: %.400s", where, expand(no, e.vars), body)
		}
	}
	return body
}

// r5Status is a Kubernetes Status reduced to what the rows compare.
type r5Status struct {
	Kind, Reason, Message string
	Code                  int
}

// r5StatusOf decodes body as a Status.
func r5StatusOf(body string) (r5Status, error) {
	var st r5Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" {
		return st, fmt.Errorf("not a Status (%v): %.300s", err, body)
	}
	return st, nil
}

// mintSATokenIn makes service account name in ws as who and returns a
// token for it.
func mintSATokenIn(e *attackEnv, who, ws, name string) (string, error) {
	sa := `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"` + name + `"}}`
	base := "/clusters/" + ws + "/api/v1/namespaces/default/serviceaccounts"
	if code, body := e.req(who, http.MethodPost, base, "", sa); code != http.StatusCreated && code != http.StatusConflict {
		return "", fmt.Errorf("service account %s: %d %s", name, code, body)
	}
	code, body := e.req(who, http.MethodPost, base+"/"+name+"/token", "", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &tr); code != http.StatusCreated || err != nil || tr.Status.Token == "" {
		return "", fmt.Errorf("token request for %s: %d %v %s", name, code, err, body)
	}
	return tr.Status.Token, nil
}
