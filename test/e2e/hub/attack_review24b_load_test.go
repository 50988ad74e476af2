package hub

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Rows r24b (attack_review24b_test.go) that load what tenants share: a
// denied flood while impersonating victor, a watch-cache relist under
// victor's watch (B-G, documented), and connections that never finish
// their headers.

// r24bOpenSlowHeaders opens n TLS connections that send the start of a
// request's headers and nothing more (the reviewer's slowloris.py,
// "header" mode). They are closed when the test ends.
func r24bOpenSlowHeaders(t *testing.T, e *attackEnv, n int) []net.Conn {
	t.Helper()
	start := "GET " + cmPath("/clusters/"+e.vars["malloryHome"]) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer mallory-token\r\nX-a: "
	return r24Hold(t, e, n, true, start)
}

// r24bEvent is one watch event, its object reduced to what the rows read.
type r24bEvent struct {
	Type   string
	Object struct {
		Code     int
		Reason   string
		Metadata struct{ Name, ResourceVersion string }
	}
}

// r24bWatch is a watch as who; events arrive on ch, which is closed when
// the stream ends.
type r24bWatch struct {
	resp *http.Response
	ch   chan r24bEvent
}

func r24bOpenWatch(t *testing.T, e *attackEnv, who, path string) *r24bWatch {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.h.URL+expand(path, e.vars), nil)
	req.Header.Set("Authorization", "Bearer "+e.tokens[who])
	c := e.h.client()
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	for try := 0; r24bReinit(resp) && try < 120; try++ {
		// Upstream's answer while a watch cache relists: 429, retry
		// after a second, as client-go does.
		resp.Body.Close()
		time.Sleep(time.Second)
		if resp, err = c.Do(req); err != nil {
			t.Fatalf("watch %s: %v", path, err)
		}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		t.Fatalf("watch %s: %d %s", path, resp.StatusCode, readAll(resp))
	}
	w := &r24bWatch{resp: resp, ch: make(chan r24bEvent, 1024)}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(w.ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			var ev r24bEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				w.ch <- ev
			}
		}
	}()
	return w
}

// r24bReinit reports whether resp is upstream's refusal while a watch
// cache (re)initializes: 429 with Retry-After and "storage is
// (re)initializing". It reads the body of such an answer.
func r24bReinit(resp *http.Response) bool {
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		return false
	}
	return strings.Contains(readAll(resp), "storage is (re)initializing")
}

// r24bListRV is the resourceVersion of a list of victor's ConfigMaps.
func r24bListRV(t *testing.T, e *attackEnv) string {
	t.Helper()
	var l struct {
		Metadata struct{ ResourceVersion string }
	}
	b := e.mustReq(t, http.StatusOK, "", "victor", http.MethodGet, cmPath("/clusters/{victorHome}"), "", "")
	if err := json.Unmarshal([]byte(b), &l); err != nil || l.Metadata.ResourceVersion == "" {
		t.Fatalf("victor's list: %v %.200s", err, b)
	}
	return l.Metadata.ResourceVersion
}

func r24bLoadRows(slow []net.Conn) []r24Row {
	return []r24Row{
		{id: "r24b:45", what: "denied floods while impersonating victor count against her", run: func(t *testing.T, e *attackEnv) {
			// Past the 50 denials a tenant gets at once, hers are paced at
			// 10 a second, each holding her seat; 150 at once outrun her
			// queue's 5 s.
			const n = 150
			asVictor := map[string]string{"Impersonate-User": "victor"}
			targets := []struct{ path, denial string }{
				{cmPath("/clusters/{victorHome}"), `User \"mallory\" cannot impersonate`},
				{cmPath("/clusters/{malloryHome}"), `User \"victor\" cannot list resource \"configmaps\"`},
			}
			// Both targets once, then her home again until her share runs
			// out: on a loaded machine her requests may arrive slower
			// than her pacing lets them through.
			for i := 0; i < 4; i++ {
				targets = append(targets, targets[1])
			}
			throttled := 0
			for round, tg := range targets {
				if round >= 2 && throttled > 0 {
					break
				}
				done := make(chan []string)
				go func() { done <- r24Victor(e, fmt.Sprintf("imp%d", round), 20) }()
				ans := r24Burst(n, false, func(int) (int, http.Header, string) {
					return e.sendFull(step{as: "mallory", method: http.MethodGet, path: tg.path, header: asVictor}, e.vars)
				})
				failed := <-done
				got, odd := r24Count(ans, tg.denial, http.StatusForbidden, http.StatusTooManyRequests)
				t.Logf("%s: mallory %d × 403, %d × 429; victor %d of 20 failed", tg.path, got[403], got[429], len(failed))
				throttled += got[http.StatusTooManyRequests]
				if len(odd) != 0 {
					t.Errorf("her flood at %s answered otherwise: %d of %d: %v", tg.path, len(odd), n, odd)
				}
				if len(failed) != 0 {
					t.Errorf("victor: %d of 20 failed during her flood at %s: %s", len(failed), tg.path, strings.Join(failed, "; "))
				}
			}
			// Her share ran out, not his: the flood is hers.
			if throttled == 0 {
				t.Errorf("none of her %d requests got 429: the flood was not counted against her share of %d", len(targets)*n, r24bInflight/10)
			}
			// She lets the name victor write in her home and sends writes
			// as victor whose bodies never arrive: they hold seats of her
			// share, so her own writes wait, and his do not.
			vars := r24bVars(e, "45")
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, "/clusters/{malloryHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", "",
				`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"r24b-victor"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"victor"}]}`)
			asVictorProbe := dryRunCM("mallory", "/clusters/{malloryHome}")
			asVictorProbe.header = asVictor
			eventually(t, 30*time.Second, func() error { // the binding reaches the authorizer
				if code, b := e.send(asVictorProbe, vars); code != http.StatusCreated {
					return fmt.Errorf("a write as victor in her home: %d %.200s", code, b)
				}
				return nil
			})
			u, _ := url.Parse(e.h.URL)
			start := "POST " + cmPath("/clusters/"+e.vars["malloryHome"]) + " HTTP/1.1\r\nHost: " + u.Host +
				"\r\nAuthorization: Bearer mallory-token\r\nImpersonate-User: victor\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
			held := r24Hold(t, e, 30, true, start)
			if err := saturated(e, vars, dryRunCM("mallory", "/clusters/{malloryHome}")); err != nil {
				t.Errorf("her own writes while victor's impersonated ones hold seats: %v", err)
			}
			r24VictorOK(t, e, "impslow", 6)
			for _, c := range held {
				c.Close()
			}
			if err := waitFor(60*time.Second, func() error {
				if code, b := e.send(dryRunCM("mallory", "/clusters/{malloryHome}"), vars); code != http.StatusCreated {
					return fmt.Errorf("her write after closing them: %d %.200s", code, b)
				}
				return nil
			}); err != nil {
				t.Error(err)
			}
		}},
		{id: "r24b:29", what: "a watch-cache relist closes victor's watch cleanly, and he resumes", run: func(t *testing.T, e *attackEnv) {
			victorCMs := cmPath("/clusters/{victorHome}")
			w := r24bOpenWatch(t, e, "victor", victorCMs+"?watch=true&resourceVersion="+r24bListRV(t, e))
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, victorCMs, "", cmJSON("r24b-before-relist"))
			// The attack: delete 900 kB ConfigMaps until the deleted
			// copies exceed the history bound (4 MiB here, 32 MiB by
			// default). Rewrites no longer get there: a tenant's share of
			// the history is a quarter of the bound, past which her large
			// writes get 429 (review 3, C-C); deletes are never refused.
			mc := cmPath("/clusters/{malloryHome}")
			for i := 0; i < 8; i++ {
				e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, mc, "", bigConfigMap(fmt.Sprintf("r24b-churn-%d", i)))
			}
			for i := 0; i < 8; i++ {
				e.mustReq(t, http.StatusOK, "", "mallory", http.MethodDelete, mc+fmt.Sprintf("/r24b-churn-%d", i), "", "")
			}
			var seen []string
			lastRV := ""
			timeout := time.After(3 * time.Minute) // bounds a broken hub only
		read:
			for {
				select {
				case ev, ok := <-w.ch:
					if !ok {
						break read
					}
					if ev.Type == "ERROR" && ev.Object.Code != http.StatusGone {
						t.Errorf("victor's watch: error event %+v, want none or 410", ev.Object)
					}
					if ev.Type != "ERROR" {
						lastRV = ev.Object.Metadata.ResourceVersion
					}
					seen = append(seen, ev.Type+" "+ev.Object.Metadata.Name)
				case <-timeout:
					t.Fatalf("victor's watch did not end; events: %v", seen)
				}
			}
			t.Logf("victor's watch ended after %v", seen)
			// While the cache relists, a paginated list (what kubectl and
			// informers send) is served from etcd; an unpaginated one
			// and a new watch get upstream's 429 until the relist is in.
			e.mustReq(t, http.StatusOK, `"name":"r24b-before-relist"`, "victor", http.MethodGet, victorCMs+"?limit=500", "", "")
			refused := 0
			eventually(t, 2*time.Minute, func() error {
				code, hdr, b := e.sendFull(step{as: "victor", method: http.MethodGet, path: victorCMs}, e.vars)
				switch {
				case code == http.StatusOK:
					return nil
				case code == http.StatusTooManyRequests && hdr.Get("Retry-After") != "" && strings.Contains(b, "storage is (re)initializing"):
					refused++
					return fmt.Errorf("victor's list: %d %.200s", code, b)
				default:
					t.Fatalf("victor's list during the relist: %d %.300s", code, b)
				}
				return nil
			})
			t.Logf("victor's unpaginated list got 429 (storage is (re)initializing) %d times before the relist was in", refused)
			if !strings.Contains(strings.Join(seen, ","), "ADDED r24b-before-relist") {
				t.Errorf("victor's watch ended without his own event: %v", seen)
			}
			if log := e.h.log.String(); !strings.Contains(log, "relisting to release them") || !strings.Contains(log, `resource="configmaps"`) {
				t.Errorf("the hub logged no configmaps relist")
			}
			// He resumes where he was, as an informer would: from his last
			// resourceVersion, or from a new list if that one is gone.
			resume := r24bOpenWatch(t, e, "victor", victorCMs+"?watch=true&resourceVersion="+lastRV)
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, victorCMs, "", cmJSON("r24b-after-relist"))
			if !r24bSees(t, resume, "r24b-after-relist") {
				again := r24bOpenWatch(t, e, "victor", victorCMs+"?watch=true&resourceVersion="+r24bListRV(t, e))
				e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, victorCMs, "", cmJSON("r24b-after-relist-2"))
				if !r24bSees(t, again, "r24b-after-relist-2") {
					t.Error("victor's watch from a fresh list delivered nothing")
				}
			}
			l := e.mustReq(t, http.StatusOK, "", "victor", http.MethodGet, victorCMs, "", "")
			for _, name := range []string{"r24b-secret", "r24b-before-relist", "r24b-after-relist"} {
				if !strings.Contains(l, `"name":"`+name+`"`) {
					t.Errorf("victor's list lacks %s", name)
				}
			}
		}},
		{id: "r24b:31", what: "connections that never finish their headers are closed by the hub", run: func(t *testing.T, e *attackEnv) {
			closed := 0
			var other []string
			for _, c := range slow {
				// The deadline bounds a broken hub only; upstream's header
				// timeout is 32 s from the connection's start.
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
				buf := make([]byte, 512)
				var err error
				for err == nil {
					_, err = c.Read(buf)
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					other = append(other, err.Error())
					continue
				}
				closed++
			}
			if closed != len(slow) {
				t.Errorf("%d of %d slow-header connections closed by the hub; still open: %v", closed, len(slow), other)
			}
			r24VictorOK(t, e, "slowheaders", 4)
			e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, cmPath("/clusters/{malloryHome}")+"?limit=1", "", "")
		}},
	}
}

// r24bSees reports whether w delivers an event of name before it ends
// or one minute passes (a bound for a broken hub only).
func r24bSees(t *testing.T, w *r24bWatch, name string) bool {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ch:
			if !ok {
				return false
			}
			if ev.Type == "ERROR" {
				t.Logf("resumed watch: %s %d %s", ev.Type, ev.Object.Code, ev.Object.Reason)
				if ev.Object.Code != http.StatusGone {
					t.Errorf("resumed watch: error %+v, want none or 410", ev.Object)
				}
				return false
			}
			if ev.Object.Metadata.Name == name {
				return true
			}
		case <-timeout:
			return false
		}
	}
}
