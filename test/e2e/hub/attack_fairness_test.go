package hub

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Attack review B10: one person holding many slow mutating requests (the
// headers of a POST, then nothing of its body) used up the hub-wide
// in-flight budget, and every other caller's writes got 429, --admin-user
// included. Now each tenant (a person's home tree) has a share of it.

// slowPostCount is above the hub-wide mutating budget (200, the default)
// and far above a tenant's share of it (20), so that it exhausts the hub
// without the per-tenant bound.
const slowPostCount = 210

// slowPosts holds requests whose body never arrives: each keeps one
// mutating slot in flight until the connection closes.
type slowPosts struct {
	mu    sync.Mutex
	conns []net.Conn
}

// slowPost is one held request: who sends it, where.
type slowPost struct{ token, path string }

// open sends the headers of each POST and the first byte of an 8192-byte
// body, and keeps the connection open. 8 KiB is one seat's worth
// (fairness.WriteBytesPerSeat): each held POST holds one seat, as the
// rows count; a larger body holds more (attack_limits_cpu_test.go).
func (s *slowPosts) open(e *attackEnv, posts []slowPost) error {
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(e.h.opts.dataDir, "pki", "serving.crt"))
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(pem)
	u, err := url.Parse(e.h.URL)
	if err != nil {
		return err
	}
	for _, p := range posts {
		c, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
		if err != nil {
			return fmt.Errorf("dialing: %w", err)
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		req := "POST " + p.path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + p.token +
			"\r\nContent-Type: application/json\r\nContent-Length: 8192\r\n\r\n{"
		if _, err := c.Write([]byte(req)); err != nil {
			return fmt.Errorf("writing: %w", err)
		}
	}
	return nil
}

// close ends every held request, then waits until probe is served again:
// the hub has let the slots go, so later rows are not disturbed.
func (s *slowPosts) close(e *attackEnv, vars map[string]string, probe step) error {
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	return waitFor(60*time.Second, func() error {
		if code, body := e.send(probe, vars); code == http.StatusTooManyRequests {
			return fmt.Errorf("still 429 after closing the held requests: %s", body)
		}
		return nil
	})
}

// saturated waits until probe is refused with 429: the held requests are
// in flight. Untimed: the deadline only bounds a broken hub.
func saturated(e *attackEnv, vars map[string]string, probe step) error {
	return waitFor(60*time.Second, func() error {
		code, body := e.send(probe, vars)
		if code != http.StatusTooManyRequests {
			return fmt.Errorf("%s %s: %d, not yet 429: %s", probe.method, probe.path, code, body)
		}
		return nil
	})
}

// cmJSON is a ConfigMap named name.
func cmJSON(name string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
}

// cmPath is the ConfigMap collection of the workspace at prefix ("" is root).
func cmPath(prefix string) string { return prefix + "/api/v1/namespaces/default/configmaps" }

// dryRunCM is bob's probe: a dry-run create, so nothing is left behind.
func dryRunCM(as, prefix string) step {
	return step{as: as, method: http.MethodPost, path: cmPath(prefix) + "?dryRun=All", body: cmJSON("probe-{n}")}
}

// othersServed is the defence: while bob's tree is at its share, everybody
// else's writes are served, by every addressing form.
func othersServed() []step {
	return []step{
		{as: "alice", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}"), body: cmJSON("during-{n}"), want: http.StatusCreated},
		{as: "carol", method: http.MethodPost, path: cmPath("/clusters/{carolID}"), body: cmJSON("during-{n}"), want: http.StatusCreated},
		{as: "hubadmin", method: http.MethodPost, path: cmPath(""), body: cmJSON("during-hubadmin-{n}"), want: http.StatusCreated},
		{as: "hubadmin", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("during-hubadmin-{n}"), want: http.StatusCreated},
		{as: "admin", method: http.MethodPost, path: cmPath("/clusters/root"), body: cmJSON("during-admin-{n}"), want: http.StatusCreated},
		// Reads are a budget of their own.
		{as: "bob", method: http.MethodGet, path: cmPath("/clusters/{bobHome}"), want: http.StatusOK},
	}
}

// tooMany checks that the answer is kube-apiserver's 429 Status with
// Retry-After.
func tooMany(e *attackEnv, vars map[string]string, s step) error {
	code, hdr, body := e.sendFull(s, vars)
	var st struct {
		Kind, Reason string
		Code         int
	}
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusTooManyRequests || err != nil ||
		st.Kind != "Status" || st.Reason != "TooManyRequests" || st.Code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		return fmt.Errorf("%s %s as %s: %d %v Retry-After %q: %s", s.method, expand(s.path, vars), s.as, code, err, hdr.Get("Retry-After"), body)
	}
	return nil
}

// mintToken creates service account name in the workspace at prefix,
// binds it to edit in default, and stores its token as e.tokens[as].
func mintToken(e *attackEnv, vars map[string]string, prefix, name, as string) error {
	sa := prefix + "/api/v1/namespaces/default/serviceaccounts"
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, sa, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"`+name+`"}}`, vars); err != nil {
		return err
	}
	rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},` +
		`"subjects":[{"kind":"ServiceAccount","name":"` + name + `","namespace":"default"}]}`
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, prefix+"/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rb, vars); err != nil {
		return err
	}
	code, body := e.as("bob", http.MethodPost, sa+"/"+name+"/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`, vars)
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &tr); code != http.StatusCreated || err != nil || tr.Status.Token == "" {
		return fmt.Errorf("token request for %s: %d %v %s", name, code, err, body)
	}
	e.tokens[as] = tr.Status.Token
	// The binding reaches the authorizer through a watch.
	return waitFor(30*time.Second, func() error {
		if code, body := e.send(dryRunCM(as, prefix), vars); code != http.StatusCreated {
			return fmt.Errorf("%s may not create ConfigMaps yet: %d %s", as, code, body)
		}
		return nil
	})
}

func init() {
	bobOnly := &slowPosts{}
	spread := &slowPosts{}
	providers := &slowPosts{}
	echo := "/services/providers/example/echo"
	registerAttacks(
		attack{finding: "review:B10", name: "slow POSTs into one's own home hold only one's own share of the in-flight budget",
			cleanup: func(e *attackEnv, vars map[string]string) error {
				return bobOnly.close(e, vars, dryRunCM("bob", "/clusters/{bobHome}"))
			},
			before: func(e *attackEnv, vars map[string]string) error {
				// bob lets alice into his home, so that an identity he
				// impersonates as alice there is authorized and reaches
				// the limit.
				rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice-{n}"},` +
					`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},` +
					`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`
				if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rb, vars); err != nil {
					return err
				}
				if err := waitFor(30*time.Second, func() error {
					if code, body := e.send(dryRunCM("alice", "/clusters/{bobHome}"), vars); code != http.StatusCreated {
						return fmt.Errorf("alice may not create ConfigMaps in bob's home yet: %d %s", code, body)
					}
					return nil
				}); err != nil {
					return err
				}
				// Every addressing form of bob's home.
				var posts []slowPost
				for i := 0; i < slowPostCount; i++ {
					ws := []string{"/clusters/" + vars["bobHome"], "/clusters/" + vars["bobID"]}[i%2]
					posts = append(posts, slowPost{token: e.tokens["bob"], path: cmPath(ws)})
				}
				if err := bobOnly.open(e, posts); err != nil {
					return err
				}
				return saturated(e, vars, dryRunCM("bob", "/clusters/{bobHome}"))
			},
			steps: append(othersServed(),
				// bob's own further writes are over his share, by path
				// and by id.
				step{as: "bob", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests, has: "TooManyRequests"},
				step{as: "bob", method: http.MethodPost, path: cmPath("/clusters/{bobID}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests, has: "TooManyRequests"},
				step{as: "bob", method: http.MethodPut, path: cmPath("/clusters/{bobHome}") + "/over-{n}", body: cmJSON("over-{n}"), want: http.StatusTooManyRequests},
				// Impersonating another name does not buy a new share: the
				// identity is confined to bob's home and counts against it.
				step{as: "bob", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("over-{n}"),
					header: map[string]string{"Impersonate-User": "alice"}, want: http.StatusTooManyRequests},
				// alice herself, let into bob's home, spends her own share.
				step{as: "alice", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("alice-in-bob-{n}"), want: http.StatusCreated},
			),
			after: func(e *attackEnv, vars map[string]string) error {
				return tooMany(e, vars, step{as: "bob", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("over-{n}")})
			}},
		attack{finding: "review:B10", name: "service accounts of one's home and its children share their person's share",
			cleanup: func(e *attackEnv, vars map[string]string) error {
				return spread.close(e, vars, dryRunCM("bob", "/clusters/{bobHome}"))
			},
			before: func(e *attackEnv, vars map[string]string) error {
				child := "fair-" + vars["n"]
				if err := bobChild(e, child, vars); err != nil {
					return err
				}
				vars["bobChild"] = vars["bobHome"] + ":" + child
				home, kid := "/clusters/"+vars["bobHome"], "/clusters/"+vars["bobChild"]
				for _, sa := range []struct{ prefix, name, as string }{
					{home, "fair-a", "bob-sa-home-a"}, {home, "fair-b", "bob-sa-home-b"}, {kid, "fair-c", "bob-sa-child"},
					// Holds nothing: refused all the same, the tree's share
					// is used up.
					{kid, "fair-idle", "bob-sa-idle"},
				} {
					if err := mintToken(e, vars, sa.prefix, sa.name, sa.as); err != nil {
						return err
					}
				}
				var posts []slowPost
				senders := []slowPost{
					{e.tokens["bob-sa-home-a"], cmPath(home)}, {e.tokens["bob-sa-home-b"], cmPath(home)},
					{e.tokens["bob-sa-child"], cmPath(kid)}, {e.tokens["bob"], cmPath(kid)},
				}
				for i := 0; i < slowPostCount; i++ {
					posts = append(posts, senders[i%len(senders)])
				}
				if err := spread.open(e, posts); err != nil {
					return err
				}
				return saturated(e, vars, dryRunCM("bob-sa-child", "/clusters/{bobChild}"))
			},
			steps: append(othersServed(),
				step{as: "bob-sa-home-a", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests},
				step{as: "bob-sa-home-b", method: http.MethodPost, path: cmPath("/clusters/{bobID}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests},
				step{as: "bob-sa-child", method: http.MethodPost, path: cmPath("/clusters/{bobChild}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests},
				step{as: "bob-sa-idle", method: http.MethodPost, path: cmPath("/clusters/{bobChild}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests},
				step{as: "bob", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("over-{n}"), want: http.StatusTooManyRequests},
			),
			after: func(e *attackEnv, vars map[string]string) error {
				return errors.Join(
					tooMany(e, vars, step{as: "bob-sa-home-a", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("over-{n}")}),
					tooMany(e, vars, step{as: "bob-sa-child", method: http.MethodPost, path: cmPath("/clusters/{bobChild}"), body: cmJSON("over-{n}")}))
			}},
		// The provider routes bypass the API chain and had no bound at
		// all: the example provider's echo reads the whole body, as a
		// provider that proxies uploads does.
		attack{finding: "review:B10", name: "slow POSTs to a provider route hold only one's own share",
			cleanup: func(e *attackEnv, vars map[string]string) error {
				return providers.close(e, vars, step{as: "bob", method: http.MethodPost, path: echo, body: "{}"})
			},
			before: func(e *attackEnv, vars map[string]string) error {
				var posts []slowPost
				for i := 0; i < 40; i++ {
					posts = append(posts, slowPost{token: e.tokens["bob"], path: echo})
				}
				if err := providers.open(e, posts); err != nil {
					return err
				}
				return saturated(e, vars, step{as: "bob", method: http.MethodPost, path: echo, body: "{}"})
			},
			steps: []step{
				{as: "alice", method: http.MethodPost, path: echo, body: "{}", want: http.StatusOK, has: `"bytes":2`},
				// carol and hubadmin have an empty group in the token file,
				// which the provider routes refuse to assert (403) whatever
				// the load; the admin token stands for the administrators.
				{as: "admin", method: http.MethodPost, path: echo, body: "{}", header: map[string]string{"X-Wharf-Workspace": "root"}, want: http.StatusOK, has: `"bytes":2`},
				{as: "bob", method: http.MethodPost, path: echo, body: "{}", want: http.StatusTooManyRequests, has: "TooManyRequests"},
				// The API's budget is not the provider routes'.
				{as: "bob", method: http.MethodPost, path: cmPath("/clusters/{bobHome}"), body: cmJSON("api-{n}"), want: http.StatusCreated},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				return tooMany(e, vars, step{as: "bob", method: http.MethodPost, path: echo, body: "{}"})
			}},
	)
}
