package hub

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/home"
)

// The attack table (issue 11). Every row is one request sequence by an
// attacker who is, as every person is, admin of their own home workspace,
// and the answers that prove the defence. Rows live in attack_*_test.go
// files, one per class of attack, and register themselves from init, so
// that the classes can grow without touching this file.
//
// All rows run in order against one hub, so a row may rely on the cache
// timing of the rows before it: each step follows the previous one within
// milliseconds, well inside any decision cache's lifetime (upstream's
// impersonation cache keeps a decision for about 10 s).

// attackTokens are the people of the attack hub. bob is the usual
// attacker, alice and carol victims; hubadmin is --admin-user; metrics is
// a scraper in system:monitoring (attack_review17_metrics_test.go).
const attackTokens = `alice-token,alice,alice-uid,"devs"
bob-token,bob,bob-uid,"devs"
carol-token,carol,carol-uid,""
hubadmin-token,hubadmin,hubadmin-uid,""
metrics-token,wharf-metrics,wharf-metrics-uid,"system:monitoring"
`

// attack is one row of the table.
type attack struct {
	// finding names what the row covers: "11.<n>" for the findings of
	// issue 11, "review:<n>" for what an attack review found.
	finding string
	name    string
	// before prepares the row with the hub's admin powers (victim
	// objects, say) and may add variables for the steps; optional.
	before func(e *attackEnv, vars map[string]string) error
	steps  []step
	// after checks a postcondition of the defence, e.g. that a victim's
	// objects survived; optional.
	after func(e *attackEnv, vars map[string]string) error
	// cleanup undoes what before set up that would disturb later rows
	// (connections held open, say). Unlike after it runs whether or not
	// the row failed, once the row is done; optional.
	cleanup func(e *attackEnv, vars map[string]string) error
}

// step is one request. Path, body and header values may hold {variables}:
// {aliceHome}, {bobHome}, {carolHome} (workspace paths), {aliceID},
// {bobID}, {carolID}, {rootID} (logical cluster ids), {n} (unique per row,
// for names), and whatever before added.
type step struct {
	// as is the caller: alice, bob, carol, hubadmin, admin (the admin
	// token, group system:masters) or "" (anonymous).
	as     string
	method string
	path   string
	body   string
	// ctype defaults to JSON for a body, merge patch for PATCH.
	ctype  string
	header map[string]string
	// addHeader is added after header, value by value: for headers sent
	// more than once (several Impersonate-Group); optional.
	addHeader http.Header
	// want is the status the defence answers; 0 accepts any (a set-up
	// step whose outcome does not matter).
	want int
	// has and hasNot are substrings the body must and must not hold.
	has, hasNot string
}

var attackRows []attack

// registerAttacks adds rows to the table; call it from init.
func registerAttacks(rows ...attack) { attackRows = append(attackRows, rows...) }

// attackEnv is the hub under attack.
type attackEnv struct {
	t      *testing.T
	h      *hubProc
	etcd   *clientv3.Client
	tokens map[string]string
	vars   map[string]string
}

// TestAttacks runs the attack table.
func TestAttacks(t *testing.T) {
	t.Parallel()
	e := startAttackHub(t)
	sort.SliceStable(attackRows, func(i, j int) bool { return attackRows[i].finding < attackRows[j].finding })
	for i, row := range attackRows {
		t.Run(row.finding+"/"+row.name, func(t *testing.T) {
			vars := map[string]string{"n": fmt.Sprintf("a%d", i)}
			for k, v := range e.vars {
				vars[k] = v
			}
			if row.cleanup != nil {
				t.Cleanup(func() {
					if err := row.cleanup(e, vars); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				})
			}
			if row.before != nil {
				if err := row.before(e, vars); err != nil {
					t.Fatalf("before: %v", err)
				}
			}
			for j, s := range row.steps {
				e.run(t, j, s, vars)
			}
			if row.after != nil {
				if err := row.after(e, vars); err != nil {
					t.Errorf("after: %v", err)
				}
			}
		})
	}
	t.Logf("attack table: %d rows", len(attackRows))
}

func startAttackHub(t *testing.T) *attackEnv {
	t.Helper()
	etcd, endpoints := externalEtcd(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(attackTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{etcdServers: endpoints, extraArgs: []string{
		"--token-auth-file", tokens, "--admin-user", "hubadmin", "--provider", "example=" + exampleProvider(t),
		// Loopback is a trusted proxy, so that a row can speak from an
		// address of its own with X-Forwarded-For: per-address throttles
		// (finding 11.12) then never spill over into other rows.
		"--trusted-proxy-cidrs", "127.0.0.1/32,::1/128",
	}})
	e := &attackEnv{t: t, h: h, etcd: etcd, vars: map[string]string{}, tokens: map[string]string{
		"alice": "alice-token", "bob": "bob-token", "carol": "carol-token", "hubadmin": "hubadmin-token", "admin": h.Token,
		"metrics": "metrics-token",
	}}
	// hubadmin authenticates once from loopback before any row floods it
	// with bad tokens, so the failure throttle knows its token there (as
	// it knows the people's, below).
	if code, body := h.doAs(e.tokens["hubadmin"], http.MethodGet, "/version", ""); code != http.StatusOK {
		t.Fatalf("hubadmin: %d %s", code, body)
	}
	// Each person's first request creates their home; their ids are
	// what cross-workspace rows aim at.
	for _, who := range []string{"alice", "bob", "carol"} {
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"] = string(home.PathOf(who))
		if w.Home == nil || w.Home.Path != e.vars[who+"Home"] {
			t.Fatalf("whoami %s: home %+v, want %s", who, w.Home, e.vars[who+"Home"])
		}
		e.vars[who+"ID"] = w.Home.Cluster
	}
	e.vars["rootID"] = h.mustKubectl("root", "get", "namespace", "default", "-o", `jsonpath={.metadata.annotations.wharf\.dev/cluster}`)
	return e
}

func expand(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// run sends one step and checks its answer.
func (e *attackEnv) run(t *testing.T, j int, s step, vars map[string]string) {
	t.Helper()
	code, body := e.send(s, vars)
	where := fmt.Sprintf("step %d: %s %s %s as %q", j, s.method, expand(s.path, vars), expand(fmt.Sprint(s.header), vars), s.as)
	if s.want != 0 && code != s.want {
		t.Fatalf("%s: got %d, want %d\n%s", where, code, s.want, body)
	}
	if s.has != "" && !strings.Contains(body, expand(s.has, vars)) {
		t.Fatalf("%s: body lacks %q\n%s", where, expand(s.has, vars), body)
	}
	if s.hasNot != "" && strings.Contains(body, expand(s.hasNot, vars)) {
		t.Fatalf("%s: body holds %q\n%s", where, expand(s.hasNot, vars), body)
	}
}

func (e *attackEnv) send(s step, vars map[string]string) (int, string) {
	e.t.Helper()
	code, _, body := e.sendFull(s, vars)
	return code, body
}

// sendFull is send, also returning the response headers (nil when the
// request failed), for rows that compare whole answers.
func (e *attackEnv) sendFull(s step, vars map[string]string) (int, http.Header, string) {
	e.t.Helper()
	body := expand(s.body, vars)
	req, err := http.NewRequestWithContext(context.Background(), s.method, e.h.URL+expand(s.path, vars), strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if s.as != "" {
		tok, ok := e.tokens[s.as]
		if !ok {
			e.t.Fatalf("no token for %q", s.as)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	ctype := s.ctype
	if ctype == "" && s.method == http.MethodPatch {
		ctype = "application/merge-patch+json"
	} else if ctype == "" && body != "" {
		ctype = "application/json"
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range s.header {
		req.Header.Set(k, expand(v, vars))
	}
	for k, vs := range s.addHeader {
		for _, v := range vs {
			req.Header.Add(k, expand(v, vars))
		}
	}
	resp, err := e.h.client().Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header, readAll(resp)
}

// as sends one request as who and returns code and body, for before and
// after hooks.
func (e *attackEnv) as(who, method, path, body string, vars map[string]string) (int, string) {
	return e.send(step{as: who, method: method, path: path, body: body}, vars)
}

// wantAs is as, returning an error unless the status is want.
func (e *attackEnv) wantAs(want int, who, method, path, body string, vars map[string]string) error {
	code, b := e.as(who, method, path, body, vars)
	if code != want {
		return fmt.Errorf("%s %s as %s: %d, want %d: %s", method, expand(path, vars), who, code, want, b)
	}
	return nil
}

// waitFor polls cond until it returns nil or timeout passes, returning its
// last error; for before and after hooks, which report instead of failing.
func waitFor(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
