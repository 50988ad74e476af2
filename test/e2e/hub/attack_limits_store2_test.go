package hub

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Rows of the third outside attack review of issue 24
// (docs/reviews/issue-24-review-3.md) about the store: the break C-C
// (attempts 15 and 16) and the attempts that held at the quota, 28 (the
// hello backlog), 29 (workspace churn) and 30 (event floods). mallory is
// the attacker, admin of her home and of what she creates under it;
// victor is the other tenant. The rows count codes and messages, never
// time.

// store2Quota is the C-C hub's etcd quota: its mark (0.8) is 76.8 MiB,
// half of it 38.4 MiB, past which the hub counts admitted writes.
const store2Quota = 96 << 20

// store2Victim is victor's sequential create/get/delete loop, as the
// reviewer's victim.py, while a row's attack runs: it counts the answers
// by code and keeps the first body of each failing code.
type store2Victim struct {
	codes map[int]int
	first map[int]string
	ops   int
}

func store2RunVictim(e *attackEnv, stop <-chan struct{}) <-chan store2Victim {
	out := make(chan store2Victim, 1)
	go func() {
		v := store2Victim{codes: map[int]int{}, first: map[int]string{}}
		cms := cmPath("/clusters/{victorHome}")
		for i := 0; ; i++ {
			select {
			case <-stop:
				out <- v
				return
			default:
			}
			name := fmt.Sprintf("v-%d", i)
			for _, r := range []struct{ method, path, body string }{
				{http.MethodPost, cms, cmJSON(name)},
				{http.MethodGet, cms + "/" + name, ""},
				{http.MethodDelete, cms + "/" + name, ""},
			} {
				code, body := e.req("victor", r.method, r.path, "", r.body)
				v.ops++
				if code >= 300 {
					v.codes[code]++
					if _, ok := v.first[code]; !ok {
						v.first[code] = r.method + " " + body
					}
				}
			}
		}
	}()
	return out
}

// store2Flood runs f(i) for i in [0,n) on c goroutines and counts the
// codes it returns.
func store2Flood(n, c int, f func(i int) (int, string)) (map[int]int, map[int]string) {
	var (
		mu    sync.Mutex
		next  atomic.Int64
		wg    sync.WaitGroup
		codes = map[int]int{}
		first = map[int]string{}
	)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				code, body := f(i)
				mu.Lock()
				codes[code]++
				if _, ok := first[code]; !ok {
					first[code] = body
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return codes, first
}

func store2Env(t *testing.T, args ...string) *attackEnv {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(r24TokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: append([]string{"--token-auth-file", tokens, "--admin-user", "hubadmin"}, args...)})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{
		"mallory": "mallory-token", "victor": "victor-token", "hubadmin": "hubadmin-token", "admin": h.Token,
	}}
	for _, who := range []string{"mallory", "victor"} {
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK || w.Home == nil {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"], e.vars[who+"ID"] = w.Home.Path, w.Home.Cluster
	}
	return e
}

// TestAttackLimitsStore2RewriteLoop is C-C (attempts 15, 16): tiny merge
// patches rewriting three stored 900 KB ConfigMaps, 10 at once. On
// 38478f0 the store's "nearly full" refusal tripped for victor with the
// store half used (every admitted byte counted as growth between two
// polls, though compaction reclaims the replaced revisions), and the
// configmaps watch cache relisted (its history of replaced copies passed
// its 32 MiB bound), closing victor's watch.
//
// The hub runs with its default watch cache history bound, where her
// share of the history stops her rewrites early. Without the bound
// (--watch-cache-history-bytes 0) nothing bounds her rewrite rate but her
// write fairness, and on this 96 MiB store the file check still refuses
// (README, "Rewrite loops of large objects", known limits).
func TestAttackLimitsStore2RewriteLoop(t *testing.T) {
	t.Parallel()
	for _, v := range []struct{ name, history string }{
		{"history bound", "33554432"},
	} {
		t.Run(v.name, func(t *testing.T) {
			store2RewriteLoop(t, store2Env(t,
				"--etcd-quota-backend-bytes", strconv.Itoa(store2Quota), "--watch-cache-history-bytes", v.history,
				// One tenant's data stands for many here: without the byte
				// ceilings she can take the store past half its mark.
				"--max-tenant-bytes", "0", "--max-workspace-bytes", "0"))
		})
	}
}

func store2RewriteLoop(t *testing.T, e *attackEnv) {
	mc := cmPath("/clusters/{malloryHome}")
	e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, "/clusters/{malloryHome}"+wsAPI, "", childWS("w1"))
	e.vars["malloryW1"] = e.vars["malloryHome"] + ":w1"
	w1 := cmPath("/clusters/{malloryW1}")
	eventually(t, time.Minute, func() error {
		if code, body := e.req("mallory", http.MethodGet, w1, "", ""); code != http.StatusOK {
			return fmt.Errorf("w1: %d %.200s", code, body)
		}
		return nil
	})
	// What she keeps: 44 ConfigMaps of 900 kB (about 40 MB, past half
	// the mark, where the hub counts what it admits) and the three she
	// rewrites. The store's live data stays far below its mark.
	if err := parallel(44, func(i int) error {
		for {
			code, body := e.req("mallory", http.MethodPost, mc, "", bigConfigMap(fmt.Sprintf("fill-%d", i)))
			switch code {
			case http.StatusCreated:
				return nil
			case http.StatusTooManyRequests:
				time.Sleep(time.Second) // her fair share; pacing, not an assertion
			default:
				return fmt.Errorf("fill-%d: %d %.300s", i, code, body)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	targets := []string{mc + "/amp", w1 + "/b1", w1 + "/b2"}
	for _, p := range targets {
		i := strings.LastIndex(p, "/")
		e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, p[:i], "", bigConfigMap(p[i+1:]))
	}
	victorCMs := cmPath("/clusters/{victorHome}")
	// The fill is growth the hub counted as it admitted it: until two
	// polls have measured it, it also counts in the estimate. The attack
	// starts on a store that measured it and refuses nobody (the
	// reviewer's was half used and quiet).
	eventually(t, time.Minute, func() error {
		code, body := e.req("victor", http.MethodPost, victorCMs, "", cmJSON(fmt.Sprintf("before-%d", time.Now().UnixNano())))
		if code != http.StatusCreated {
			return fmt.Errorf("victor's create before the attack: %d %.200s", code, body)
		}
		return nil
	})
	time.Sleep(5 * time.Second) // two polls of 2 s: pacing, not an assertion
	w := r24bOpenWatch(t, e, "victor", victorCMs+"?watch=true&timeoutSeconds=1800&resourceVersion="+r24bListRV(t, e))

	t.Run("C-C/a rewrite loop of big objects neither refuses victor's writes nor closes his watch", func(t *testing.T) {
		t.Logf("store before the loop: file %.0f, in use %.0f bytes", metricValue(t, e, "wharf_store_size_bytes"), metricValue(t, e, "wharf_store_size_in_use_bytes"))
		stop := make(chan struct{})
		victim := store2RunVictim(e, stop)
		// 300 tiny patches, 10 at once: 270 MB of rewritten ConfigMaps
		// on a 96 MiB store.
		const patches = 300
		codes, first := store2Flood(patches, 10, func(i int) (int, string) {
			return e.req("mallory", http.MethodPatch, targets[i%len(targets)], "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"labels":{"x":"%d"}}}`, i))
		})
		close(stop)
		v := <-victim
		t.Logf("mallory's %d patches: %v", patches, codes)
		t.Logf("victor: %d operations, failures %v", v.ops, v.codes)
		for code, n := range codes {
			switch code {
			case http.StatusOK:
			case http.StatusTooManyRequests:
				// Her own limits (write fairness, her share of the watch
				// cache's history) are hers to meet.
			case 0:
				// Her client gave up waiting (a loaded machine): hers.
			default:
				t.Errorf("mallory got %d × %d: %.300s", n, code, first[code])
			}
		}
		if codes[http.StatusOK] == 0 {
			t.Errorf("none of mallory's patches went through: %v", codes)
		}
		for code, n := range v.codes {
			if strings.Contains(v.first[code], fullMessage) {
				t.Errorf("victor's writes were refused %d times with %q while the store's data is half its mark: %.300s", n, fullMessage, v.first[code])
				continue
			}
			t.Errorf("victor got %d × %d: %.300s", n, code, v.first[code])
		}
		// His watch is the one he opened before the attack: a relist of
		// the configmaps cache would have ended it.
		e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, victorCMs, "", cmJSON("after-rewrites"))
		if !r24bSees(t, w, "after-rewrites") {
			t.Errorf("victor's watch ended during the rewrite loop (the configmaps watch cache relisted)")
		}
		if log := e.h.log.String(); strings.Contains(log, "relisting to release them") && strings.Contains(log, `resource="configmaps"`) {
			t.Errorf("the hub relisted the configmaps watch cache")
		}
		c := hubEtcd(t, e.h)
		st, err := c.Status(context.Background(), c.Endpoints()[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("etcd after the loop: dbSize %d, in use %d, quota %d", st.DbSize, st.DbSizeInUse, store2Quota)
	})
}

// store2QuotaHub serves rows 28-30: the hello provider, three child
// workspaces per workspace and 16 MiB per tenant.
func store2QuotaHub(t *testing.T) *attackEnv {
	t.Helper()
	hello := providerBinary(t, "./sdk/examples/hello", "hello")
	e := store2Env(t, "--provider", "hello="+hello, "--max-child-workspaces=3", "--max-tenant-bytes", strconv.Itoa(16<<20))
	binding := "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: hello\nspec:\n  provider: hello\n"
	for _, who := range []string{"mallory", "victor"} {
		e.h.mustApply(e.vars[who+"Home"], binding, "create")
	}
	greetings := "/clusters/{victorHome}/apis/hello.wharf.dev/v1alpha1/namespaces/default/greetings"
	eventually(t, 90*time.Second, func() error {
		if code, body := e.req("victor", http.MethodGet, greetings, "", ""); code != http.StatusOK {
			return fmt.Errorf("victor's greetings: %d %.200s", code, body)
		}
		return nil
	})
	return e
}

func greetingJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"hello.wharf.dev/v1alpha1","kind":"Greeting","metadata":{"name":%q},"spec":{"message":%q}}`, name, name)
}

// TestAttackLimitsStore2Held are the attempts of the third review that
// held at the quota; each asserts what held.
func TestAttackLimitsStore2Held(t *testing.T) {
	t.Parallel()
	e := store2QuotaHub(t)

	t.Run("r24c:28/victor's Greeting is answered beside a backlog of thousands of hers", func(t *testing.T) {
		hers := "/clusters/{malloryHome}/apis/hello.wharf.dev/v1alpha1/namespaces/default/greetings"
		his := "/clusters/{victorHome}/apis/hello.wharf.dev/v1alpha1/namespaces/default/greetings"
		const n = 2000
		var answered []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			// victor's three Greetings go in while hers are written.
			for k := range 3 {
				name := fmt.Sprintf("victor-%d", k)
				if code, body := e.req("victor", http.MethodPost, his, "", greetingJSON(name)); code != http.StatusCreated {
					answered = append(answered, fmt.Sprintf("%s: create %d %.200s", name, code, body))
					continue
				}
				answered = append(answered, name)
			}
		}()
		codes, first := store2Flood(n, 20, func(i int) (int, string) {
			return e.req("mallory", http.MethodPost, hers, "", greetingJSON(fmt.Sprintf("bg-%d", i)))
		})
		<-done
		t.Logf("mallory's %d Greetings: %v", n, codes)
		for code, k := range codes {
			if code != http.StatusCreated && code != http.StatusTooManyRequests && code != http.StatusForbidden {
				t.Errorf("mallory got %d × %d: %.300s", k, code, first[code])
			}
		}
		if codes[http.StatusCreated] < n/2 {
			t.Fatalf("only %d of her Greetings were created: no backlog", codes[http.StatusCreated])
		}
		for _, name := range answered {
			if !strings.HasPrefix(name, "victor-") || strings.Contains(name, ":") {
				t.Fatal(name)
			}
			// Bounds a broken hub only; the reviewer saw 0.5 s.
			eventually(t, 3*time.Minute, func() error {
				code, body := e.req("victor", http.MethodGet, his+"/"+name, "", "")
				if code != http.StatusOK || !strings.Contains(body, `"reply":"Hello, `+name+`"`) {
					return fmt.Errorf("%s not answered: %d %.200s", name, code, body)
				}
				return nil
			})
		}
	})

	t.Run("r24c:29/workspace churn at the quota leaves victor's operations alone", func(t *testing.T) {
		ws := "/clusters/{malloryHome}" + wsAPI
		for k := range 3 {
			if code, body := e.req("mallory", http.MethodPost, ws, "", childWS(fmt.Sprintf("keep-%d", k))); code != http.StatusCreated && code != http.StatusConflict {
				t.Fatalf("keep-%d: %d %.300s", k, code, body)
			}
		}
		stop := make(chan struct{})
		victim := store2RunVictim(e, stop)
		// 5 at once, 30 each: create a child and delete it.
		codes, first := store2Flood(150, 5, func(i int) (int, string) {
			name := fmt.Sprintf("churn-%d", i)
			code, body := e.req("mallory", http.MethodPost, ws, "", childWS(name))
			dcode, dbody := e.req("mallory", http.MethodDelete, ws+"/"+name, "", "")
			return code*1000 + dcode, body + " / " + dbody
		})
		close(stop)
		v := <-victim
		t.Logf("mallory's churn (create*1000+delete): %v; victor: %d operations, failures %v", codes, v.ops, v.codes)
		for code, k := range codes {
			if code != http.StatusForbidden*1000+http.StatusNotFound {
				t.Errorf("mallory got %d × create %d, delete %d: %.300s", k, code/1000, code%1000, first[code])
			} else if !strings.Contains(first[code], "exceeded quota") {
				t.Errorf("her creates were refused without naming the quota: %.300s", first[code])
			}
		}
		for code, k := range v.codes {
			t.Errorf("victor got %d × %d: %.300s", k, code, v.first[code])
		}
	})

	t.Run("r24c:30/event floods at the quota leave victor's operations alone", func(t *testing.T) {
		// She fills her tenant's 16 MiB first.
		mc := cmPath("/clusters/{malloryHome}")
		// Big ConfigMaps, then smaller ones, until even an empty one
		// does not fit.
		full := false
		for i, size := 0, bigValue; i < 400 && !full; i++ {
			body := cmJSON(fmt.Sprintf("fill-%d", i))
			if size > 0 {
				body = fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fill-%d"},"data":{"k":%q}}`, i, strings.Repeat("x", size))
			}
			code, resp := e.req("mallory", http.MethodPost, mc, "", body)
			switch {
			case code == http.StatusCreated:
			case code == http.StatusForbidden && strings.Contains(resp, "exceeded quota"):
				if full = size == 0; size < 1000 {
					size = 0
				} else {
					size /= 10
				}
			default:
				t.Fatalf("fill-%d: %d %.300s", i, code, resp)
			}
		}
		if !full {
			t.Fatal("her tenant never reached its byte quota")
		}
		ev := "/clusters/{malloryHome}/api/v1/namespaces/default/events"
		stop := make(chan struct{})
		victim := store2RunVictim(e, stop)
		codes, first := store2Flood(600, 20, func(i int) (int, string) {
			return e.req("mallory", http.MethodPost, ev, "", fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev-%d"},"involvedObject":{"kind":"ConfigMap","name":"small","namespace":"default"},"reason":"Spam","message":"spam %d","type":"Normal"}`, i, i))
		})
		close(stop)
		v := <-victim
		t.Logf("mallory's events: %v; victor: %d operations, failures %v", codes, v.ops, v.codes)
		for code, k := range codes {
			if code != http.StatusForbidden && code != http.StatusTooManyRequests {
				t.Errorf("mallory got %d × %d: %.300s", k, code, first[code])
			}
		}
		if codes[http.StatusForbidden] == 0 || !strings.Contains(first[http.StatusForbidden], "exceeded quota") {
			t.Errorf("her events were not refused by her quota: %v %.300s", codes, first[http.StatusForbidden])
		}
		for code, k := range v.codes {
			t.Errorf("victor got %d × %d: %.300s", k, code, v.first[code])
		}
		// victor's own events still go in.
		e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, "/clusters/{victorHome}/api/v1/namespaces/default/events", "",
			`{"apiVersion":"v1","kind":"Event","metadata":{"name":"victor-ev"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"default"},"reason":"Mine","message":"mine","type":"Normal"}`)
	})
}
