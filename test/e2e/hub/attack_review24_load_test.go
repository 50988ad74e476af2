package hub

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Rows r24 (attack_review24_test.go) that load what tenants share:
// events, lists, watches, connections, credentials, writes and bodies.
// Each asserts that victor's requests all succeed and how mallory's are
// answered, by code and count.

func r24Event(name string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Flood","message":"m","type":"Normal"}`, name)
}

func r24Events(ws string) string { return "/clusters/" + ws + "/api/v1/namespaces/default/events" }

// r24Flood creates n events in ws one after another and counts the
// answers: created, and refused by each bucket (by the text after
// "limit reached on type ").
func r24Flood(t *testing.T, e *attackEnv, ws, tag string, n int) (created int, refused map[string]int) {
	t.Helper()
	refused = map[string]int{}
	for i := 0; i < n; i++ {
		code, b := e.req("mallory", http.MethodPost, r24Events(ws), "", r24Event(fmt.Sprintf("%s-%d", tag, i)))
		_, key, limited := strings.Cut(b, "limit reached on type ")
		switch {
		case code == http.StatusCreated:
			created++
		case code == http.StatusTooManyRequests && limited && strings.Contains(b, `"reason":"TooManyRequests"`):
			refused[strings.SplitN(key, `"`, 2)[0]]++
		default:
			t.Fatalf("event %d: %d %s", i, code, b)
		}
	}
	return created, refused
}

func r24EventRows() []r24Row {
	return []r24Row{
		{id: "r24:26", what: "an event flood into her home meets the workspace's burst", run: func(t *testing.T, e *attackEnv) {
			const n = 25
			created, refused := r24Flood(t, e, e.vars["malloryHome"], "flood", n)
			key := "Workspace for key " + e.vars["malloryID"]
			if created != r24WSEventBurst || refused[key] != n-r24WSEventBurst || len(refused) != 1 {
				t.Errorf("%d events created, refused %v; want %d created and %d refused by %q", created, refused, r24WSEventBurst, n-r24WSEventBurst, key)
			}
			r24Steps(t, e, r24Vars(e, "26"),
				step{as: "mallory", method: http.MethodPost, path: "/clusters/{malloryHome}/apis/events.k8s.io/v1/namespaces/default/events", want: http.StatusTooManyRequests, has: key,
					body: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"flood-v1"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"x/y","reportingInstance":"i","action":"A","reason":"Flood","type":"Normal","regarding":{"kind":"ConfigMap","namespace":"default","name":"x"}}`},
				step{as: "victor", method: http.MethodPost, path: r24Events("{victorHome}"), body: r24Event("fine-0"), want: http.StatusCreated},
				step{as: "victor", method: http.MethodPost, path: r24Events("{victorHome}"), body: r24Event("fine-1"), want: http.StatusCreated},
				step{as: "hubadmin", method: http.MethodPost, path: r24Events("{malloryHome}"), body: r24Event("admin-0"), want: http.StatusCreated})
		}},
		{id: "r24:27", what: "the flood moved to a child workspace meets the tenant's burst", run: func(t *testing.T, e *attackEnv) {
			const n = 25
			if err := bobChild(e, "r24-ev", r24Vars(e, "27")); err != nil {
				t.Fatal(err)
			}
			// The tenant's bucket has what r24:26 left of it; the
			// child's own bucket is full.
			left := r24TenantEventBurst - r24WSEventBurst
			created, refused := r24Flood(t, e, e.vars["malloryHome"]+":r24-ev", "flood", n)
			tenant := "Tenant for key " + e.vars["malloryHome"]
			var ws int
			for k, v := range refused {
				if strings.HasPrefix(k, "Workspace for key ") {
					ws += v
				}
			}
			if created != left || refused[tenant] != r24WSEventBurst-left || ws != n-r24WSEventBurst || len(refused) != 2 {
				t.Errorf("%d events created, refused %v; want %d created, %d refused by the tenant's bucket, %d by the workspace's",
					created, refused, left, r24WSEventBurst-left, n-r24WSEventBurst)
			}
			r24Steps(t, e, r24Vars(e, "27"),
				step{as: "victor", method: http.MethodPost, path: r24Events("{victorHome}"), body: r24Event("fine-2"), want: http.StatusCreated})
		}},
	}
}

// r24Drain is a GET as who that reads the body away, keeping its start.
func r24Drain(e *attackEnv, who, path string) (int, http.Header, string) {
	req, err := http.NewRequest(http.MethodGet, e.h.URL+expand(path, e.vars), nil)
	if err != nil {
		return 0, nil, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[who])
	c := e.h.client()
	c.Timeout = 2 * time.Minute
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	head := make([]byte, 512)
	k, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, string(head[:k])
}

// r24Dial opens a connection to the hub, TLS or bare TCP.
func r24Dial(e *attackEnv, handshake bool) (net.Conn, error) {
	u, err := url.Parse(e.h.URL)
	if err != nil {
		return nil, err
	}
	if !handshake {
		return net.Dial("tcp", u.Host)
	}
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(e.h.opts.dataDir, "pki", "serving.crt"))
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(pem)
	return tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
}

// r24Hold opens n connections and writes start on each (nothing: idle);
// it returns them for closing.
func r24Hold(t *testing.T, e *attackEnv, n int, handshake bool, start string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := 0; i < n; i++ {
		c, err := r24Dial(e, handshake)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if start != "" {
			if _, err := c.Write([]byte(start)); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
		}
	}
	return conns
}

// r24FloodRow runs send n times at once as mallory while victor makes 20
// requests; victor's must all succeed and mallory's be want or a proper
// 429.
func r24FloodRow(t *testing.T, e *attackEnv, tag string, n, want int, send func(i int) (int, http.Header, string)) {
	t.Helper()
	done := make(chan []string)
	go func() { done <- r24Victor(e, tag, 20) }()
	ans := r24Burst(n, false, send)
	failed := <-done
	got, odd := r24Count(ans, "", want, http.StatusTooManyRequests)
	t.Logf("mallory: %d × %d, %d × 429; victor: %d of 20 failed", got[want], want, got[http.StatusTooManyRequests], len(failed))
	if len(odd) != 0 {
		t.Errorf("mallory's flood answered otherwise: %d of %d: %v", len(odd), n, odd)
	}
	if len(failed) != 0 {
		t.Errorf("victor: %d of 20 failed: %s", len(failed), strings.Join(failed, "; "))
	}
}

func r24LoadRows() []r24Row {
	malloryCMs := cmPath("/clusters/{malloryHome}")
	return []r24Row{
		{id: "r24:20", what: "watches beyond her tenant's cap, and victor's watch", run: func(t *testing.T, e *attackEnv) {
			w := &watches{h: e.h}
			defer w.closeAll()
			const extra = 4
			path := cmPath("/clusters/"+e.vars["malloryHome"]) + "?watch=true"
			refused := 0
			for i := 0; i < r24WatchCap+extra; i++ {
				code, hdr, body := w.open(e.tokens["mallory"], path)
				switch {
				case code == http.StatusOK:
				case code == http.StatusTooManyRequests && hdr.Get("Retry-After") != "" && strings.Contains(body, `"reason":"TooManyRequests"`):
					refused++
				default:
					t.Fatalf("watch %d: %d %s", i, code, body)
				}
			}
			if refused != extra {
				t.Errorf("%d of her %d watches refused, want the %d over the cap of %d", refused, r24WatchCap+extra, extra, r24WatchCap)
			}
			if tok, ok := e.tokens["mallory-sa"]; ok { // minted by r24:11; her tenant's too
				if code, _, body := w.open(tok, path); code != http.StatusTooManyRequests {
					t.Errorf("her service account's watch: %d %s, want 429", code, body)
				}
			}
			// victor's watch opens and delivers.
			req, _ := http.NewRequest(http.MethodGet, e.h.URL+cmPath("/clusters/"+e.vars["victorHome"])+"?watch=true", nil)
			req.Header.Set("Authorization", "Bearer "+e.tokens["victor"])
			c := e.h.client()
			c.Timeout = 0
			resp, err := c.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("victor's watch: %v %v", err, resp)
			}
			defer resp.Body.Close()
			seen := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 8<<20)
				for sc.Scan() {
					if strings.Contains(sc.Text(), `"name":"r24-watched"`) {
						seen <- true
						return
					}
				}
				seen <- false
			}()
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, cmPath("/clusters/{victorHome}"), "", cmJSON("r24-watched"))
			select {
			case ok := <-seen:
				if !ok {
					t.Error("victor's watch ended before his ConfigMap's event")
				}
			case <-time.After(60 * time.Second): // bounds a broken hub only
				t.Error("victor's watch delivered no event for his ConfigMap")
			}
			// Closed watches give their place back.
			w.closeAll()
			eventually(t, 30*time.Second, func() error {
				if code, _, body := w.open(e.tokens["mallory"], path); code != http.StatusOK {
					return fmt.Errorf("her watch after closing hers: %d %s", code, body)
				}
				return nil
			})
		}},
		{id: "r24:19", what: "24 concurrent lists of her 4 MB of ConfigMaps", run: func(t *testing.T, e *attackEnv) {
			for i := 0; i < 8; i++ {
				raw := make([]byte, 400<<10)
				_, _ = rand.Read(raw)
				e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, malloryCMs, "",
					fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24-big-%d"},"data":{"d":%q}}`, i, base64.StdEncoding.EncodeToString(raw)))
			}
			r24FloodRow(t, e, "lists", 24, http.StatusOK, func(int) (int, http.Header, string) { return r24Drain(e, "mallory", malloryCMs) })
		}},
		{id: "r24:21", what: "100 connections sending their headers slowly", run: func(t *testing.T, e *attackEnv) {
			u, _ := url.Parse(e.h.URL)
			r24Hold(t, e, 100, true, "GET "+cmPath("/clusters/"+e.vars["victorHome"])+" HTTP/1.1\r\nHost: "+u.Host+"\r\nX-Slow: ")
			r24VictorOK(t, e, "slowheaders", 10)
			e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, malloryCMs+"?limit=1", "", "")
		}},
		{id: "r24:24", what: "40 writes whose bodies never arrive", run: func(t *testing.T, e *attackEnv) {
			vars := r24Vars(e, "24")
			probe := dryRunCM("mallory", "/clusters/{malloryHome}")
			held := &slowPosts{}
			defer func() {
				if err := held.close(e, vars, probe); err != nil {
					t.Error(err)
				}
			}()
			var posts []slowPost
			for i := 0; i < 40; i++ {
				posts = append(posts, slowPost{token: e.tokens["mallory"], path: cmPath("/clusters/" + e.vars["malloryHome"])})
			}
			if err := held.open(e, posts); err != nil {
				t.Fatal(err)
			}
			// They hold her share of the write budget, and only hers.
			if err := saturated(e, vars, probe); err != nil {
				t.Fatal(err)
			}
			r24VictorOK(t, e, "slowbodies", 10)
			r24Steps(t, e, vars, step{as: "hubadmin", method: http.MethodPost, path: malloryCMs, body: cmJSON("admin-{n}"), want: http.StatusCreated})
			if err := tooMany(e, vars, step{as: "mallory", method: http.MethodPost, path: malloryCMs, body: cmJSON("over-{n}")}); err != nil {
				t.Error(err)
			}
		}},
		{id: "r24:25", what: "150 idle TLS connections and 50 that never start TLS", run: func(t *testing.T, e *attackEnv) {
			r24Hold(t, e, 150, true, "")
			r24Hold(t, e, 50, false, "")
			r24VictorOK(t, e, "idle", 10)
			e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, malloryCMs+"?limit=1", "", "")
		}},
		{id: "r24:31", what: "bogus tokens from one address", run: func(t *testing.T, e *attackEnv) {
			vars := r24Vars(e, "31")
			from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
			const addr = "203.0.113.24"
			// victor has worked from the address before the flood.
			r24Steps(t, e, vars, step{as: "victor", method: http.MethodGet, path: "/api/whoami", header: from(addr), want: http.StatusOK})
			if err := floodFrom(e, addr, vars); err != nil {
				t.Fatal(err)
			}
			r24Steps(t, e, vars,
				step{method: http.MethodGet, path: "/api/whoami", header: map[string]string{"Authorization": badToken(), "X-Forwarded-For": addr}, want: http.StatusTooManyRequests, has: `"reason":"TooManyRequests"`},
				// A static token never used from the address waits, as the
				// README says: it is the one kind a guesser could find.
				step{as: "mallory", method: http.MethodGet, path: "/api/whoami", header: from(addr), want: http.StatusTooManyRequests},
				step{as: "victor", method: http.MethodGet, path: "/clusters/{victorHome}/api/whoami", header: from(addr), want: http.StatusOK, has: `"user":"victor"`},
				step{as: "victor", method: http.MethodGet, path: cmPath("/clusters/{victorHome}"), want: http.StatusOK},
				step{as: "mallory", method: http.MethodGet, path: "/api/whoami", header: from("203.0.113.124"), want: http.StatusOK, has: `"user":"mallory"`})
		}},
		{id: "r24:32", what: "120 concurrent TokenRequests", run: func(t *testing.T, e *attackEnv) {
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, "/clusters/{malloryHome}/api/v1/namespaces/default/serviceaccounts", "",
				`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"r24-tok"}}`)
			r24FloodRow(t, e, "tokens", 120, http.StatusCreated, func(int) (int, http.Header, string) {
				code, hdr, body := r24Post(e, "mallory", "/clusters/{malloryHome}/api/v1/namespaces/default/serviceaccounts/r24-tok/token",
					`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
				if code == http.StatusCreated {
					body = "(token)" // never logged
				}
				return code, hdr, body
			})
		}},
		{id: "r24:33", what: "150 concurrent creates", run: func(t *testing.T, e *attackEnv) {
			r24FloodRow(t, e, "writes", 150, http.StatusCreated, func(i int) (int, http.Header, string) {
				return r24Post(e, "mallory", malloryCMs, cmJSON(fmt.Sprintf("flood-%d", i)))
			})
			e.mustReq(t, http.StatusCreated, "", "hubadmin", http.MethodPost, malloryCMs, "", cmJSON("r24-after-flood"))
		}},
		{id: "r24:30", what: "300 ConfigMaps whose owner goes just before victor's", run: func(t *testing.T, e *attackEnv) {
			const orphans = 300
			uid := func(who, path, body string) string {
				var o struct {
					Metadata struct{ UID, ResourceVersion string }
				}
				b := e.mustReq(t, http.StatusCreated, "", who, http.MethodPost, path, "", body)
				if err := json.Unmarshal([]byte(b), &o); err != nil || o.Metadata.UID == "" {
					t.Fatalf("%v: %s", err, b)
				}
				return o.Metadata.UID + " " + o.Metadata.ResourceVersion
			}
			owned := func(name, owner, ownerUID string) string {
				return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"r24-role":"dep"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q}]}}`, name, owner, ownerUID)
			}
			victorCMs := cmPath("/clusters/{victorHome}")
			mOwner := strings.Fields(uid("mallory", malloryCMs, cmJSON("r24-owner")))[0]
			if err := parallel(orphans, func(i int) error {
				return waitFor(60*time.Second, func() error {
					if code, b := e.req("mallory", http.MethodPost, malloryCMs, "", owned(fmt.Sprintf("r24-dep-%d", i), "r24-owner", mOwner)); code != http.StatusCreated && code != http.StatusConflict {
						return fmt.Errorf("dependent %d: %d %.200s", i, code, b)
					}
					return nil
				})
			}); err != nil {
				t.Fatal(err)
			}
			vOwner := strings.Fields(uid("victor", victorCMs, cmJSON("r24-vowner")))[0]
			dep := strings.Fields(uid("victor", victorCMs, owned("r24-vdep", "r24-vowner", vOwner)))
			req, _ := http.NewRequest(http.MethodGet, e.h.URL+expand(victorCMs, e.vars)+"?watch=true&fieldSelector=metadata.name%3Dr24-vdep&resourceVersion="+dep[1], nil)
			req.Header.Set("Authorization", "Bearer "+e.tokens["victor"])
			c := e.h.client()
			c.Timeout = 0
			resp, err := c.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("victor's watch: %v %v", err, resp)
			}
			defer resp.Body.Close()
			gone := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if strings.Contains(sc.Text(), `"type":"DELETED"`) {
						gone <- true
						return
					}
				}
				gone <- false
			}()
			// The attack: her owner goes, then victor's.
			e.mustReq(t, http.StatusOK, "", "mallory", http.MethodDelete, malloryCMs+"/r24-owner", "", "")
			e.mustReq(t, http.StatusOK, "", "victor", http.MethodDelete, victorCMs+"/r24-vowner", "", "")
			select {
			case ok := <-gone:
				if !ok {
					t.Fatal("victor's watch ended before his dependent was collected")
				}
			case <-time.After(3 * time.Minute): // bounds a broken hub only
				t.Fatal("victor's dependent was never collected")
			}
			left := r24Items(t, e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, malloryCMs+"?labelSelector=r24-role%3Ddep", "", ""))
			t.Logf("her orphans left when victor's dependent was collected: %d of %d", left, orphans)
			if left < orphans/2 {
				t.Errorf("victor's dependent was collected only after %d of her %d orphans", orphans-left, orphans)
			}
		}},
		{id: "r24:35", what: "bodies over the request limit and over an object's", run: func(t *testing.T, e *attackEnv) {
			huge := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24-huge"},"data":{"k":%q}}`, strings.Repeat("x", 4<<20))
			const tooLarge = "Request entity too large: limit is 3145728"
			r24Steps(t, e, r24Vars(e, "35"),
				step{as: "mallory", method: http.MethodPost, path: malloryCMs, body: huge, want: http.StatusRequestEntityTooLarge, has: tooLarge},
				step{as: "mallory", method: http.MethodPut, path: malloryCMs + "/r24-huge", body: huge, want: http.StatusRequestEntityTooLarge, has: tooLarge},
				step{as: "mallory", method: http.MethodPatch, path: malloryCMs + "/r24-huge", body: huge, want: http.StatusRequestEntityTooLarge, has: tooLarge},
				step{as: "mallory", method: http.MethodPatch, path: malloryCMs + "/r24-huge?fieldManager=m", ctype: "application/apply-patch+yaml", body: huge, want: http.StatusRequestEntityTooLarge, has: tooLarge},
				step{as: "mallory", method: http.MethodPost, path: malloryCMs, want: http.StatusUnprocessableEntity, has: "[]: Too long: may not be more than 1048576 bytes",
					body: fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24-huge"},"data":{"k":%q}}`, strings.Repeat("x", 2<<20))},
				step{as: "mallory", method: http.MethodGet, path: malloryCMs + "/r24-huge", want: http.StatusNotFound})
			r24VictorOK(t, e, "huge", 4)
		}},
		{id: "r24:37", what: "bodies nested 20000 deep", run: func(t *testing.T, e *attackEnv) {
			deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, malloryCMs, "", `{"metadata":{"name":"r24-flat"},"data":{"k":"v"}}`)
			for _, s := range []struct{ what, method, path, ctype, body string }{
				{"create", http.MethodPost, malloryCMs, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24-deep"},"data":{"k":"v"},"x":` + deep + `}`},
				{"merge patch", http.MethodPatch, malloryCMs + "/r24-flat", "application/merge-patch+json", `{"x":` + deep + `}`},
				{"strategic merge patch", http.MethodPatch, malloryCMs + "/r24-flat", "application/strategic-merge-patch+json", `{"x":` + deep + `}`},
				{"JSON patch", http.MethodPatch, malloryCMs + "/r24-flat", "application/json-patch+json", `[{"op":"add","path":"/data/k","value":` + deep + `}]`},
				{"apply (YAML)", http.MethodPatch, malloryCMs + "/r24-flat?fieldManager=m", "application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r24-flat}\nx: " + deep + "\n"},
			} {
				code, b := e.req("mallory", s.method, s.path, s.ctype, s.body)
				if code != http.StatusBadRequest || !strings.Contains(b, `"reason":"BadRequest"`) {
					t.Errorf("%s: %d %.300s, want 400 BadRequest", s.what, code, b)
				}
			}
			r24Steps(t, e, r24Vars(e, "37"),
				step{as: "mallory", method: http.MethodGet, path: malloryCMs + "/r24-deep", want: http.StatusNotFound},
				step{as: "mallory", method: http.MethodGet, path: malloryCMs + "/r24-flat", want: http.StatusOK, has: `"data":{"k":"v"}`})
			r24VictorOK(t, e, "deep", 4)
		}},
	}
}
