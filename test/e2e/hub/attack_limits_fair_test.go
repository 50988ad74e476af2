package hub

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 24, cost-aware fairness (B2, B3, B5, B6). One hub with a
// replicas: single provider; mallory attacks, alice is the victim. Every
// row counts outcomes (errors, refusals, missed lease renewals, plugin
// restarts), never times.

// fairWatchCap is --max-watches-per-tenant for this hub: small, so that
// B5 runs at a small scale.
const fairWatchCap = 20

// leaseMissed is what hub/leases logs when a renewal missed its deadline
// and the provider is stopped.
const leaseMissed = "Could not renew provider lease before its deadline"

func TestAttackLimitsFair(t *testing.T) {
	t.Parallel()
	bin := singleProvider(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"devs\"\nmallory-token,mallory,mallory-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens, "--provider", "single=" + bin,
		"--max-watches-per-tenant", fmt.Sprint(fairWatchCap)}})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{"alice": "alice-token", "mallory": "mallory-token", "admin": h.Token}}
	for _, who := range []string{"alice", "mallory"} {
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK || w.Home == nil {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"] = w.Home.Path
	}
	var plugin int
	eventually(t, 90*time.Second, func() error {
		kids := pluginChildren(t, h.cmd.Process.Pid, bin)
		if len(kids) != 1 {
			return fmt.Errorf("%d single plugin processes", len(kids))
		}
		plugin = kids[0]
		return nil
	})

	// victim makes n requests as alice in her home, one after another,
	// and returns those that failed.
	victim := func(n int) []string {
		var errs []string
		for i := 0; i < n; i++ {
			s := []step{
				{as: "alice", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}"), body: cmJSON(fmt.Sprintf("victim-%d-{n}", i)), want: http.StatusCreated},
				{as: "alice", method: http.MethodGet, path: cmPath("/clusters/{aliceHome}"), want: http.StatusOK},
			}[i%2]
			vars := map[string]string{"n": fmt.Sprint(time.Now().UnixNano())}
			for k, v := range e.vars {
				vars[k] = v
			}
			if code, body := e.send(s, vars); code != s.want {
				errs = append(errs, fmt.Sprintf("%s %s: %d %.200s", s.method, s.path, code, body))
			}
		}
		return errs
	}

	t.Run("B6/denied requests count against the sender's share", func(t *testing.T) {
		// mallory holds her mutating share with slow bodies into her own
		// home, then floods alice's home, which she may not see.
		held := &slowPosts{}
		defer func() {
			if err := held.close(e, e.vars, dryRunCM("mallory", "/clusters/{malloryHome}")); err != nil {
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
		if err := saturated(e, e.vars, dryRunCM("mallory", "/clusters/{malloryHome}")); err != nil {
			t.Fatal(err)
		}
		var codes sync.Map
		var wg sync.WaitGroup
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body := e.send(step{as: "mallory", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}"), body: cmJSON("flood")}, e.vars)
				n, _ := codes.LoadOrStore(code, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				if code == http.StatusTooManyRequests {
					if err := tooMany(e, e.vars, step{as: "mallory", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}"), body: cmJSON("flood")}); err != nil {
						t.Error(err)
					}
				} else if code != http.StatusForbidden {
					t.Errorf("flood: %d %.200s", code, body)
				}
			}()
		}
		failed := victim(20)
		wg.Wait()
		count := func(code int) int32 {
			if n, ok := codes.Load(code); ok {
				return n.(*atomic.Int32).Load()
			}
			return 0
		}
		t.Logf("flood: %d refused with 429, %d denied with 403; victim: %d of 20 failed", count(429), count(403), len(failed))
		if count(http.StatusForbidden) != 0 || count(http.StatusTooManyRequests) != 200 {
			t.Errorf("mallory's denied flood was not counted against her used-up share: %d 403, %d 429 of 200", count(403), count(429))
		}
		if len(failed) != 0 {
			t.Errorf("victim: %d failed: %s", len(failed), strings.Join(failed, "; "))
		}
	})

	t.Run("B5/watches over the tenant's cap are refused", func(t *testing.T) {
		w := &watches{h: h}
		defer w.closeAll()
		var refused int
		for i := 0; i < fairWatchCap+10; i++ {
			code, hdr, body := w.open(e.tokens["mallory"], cmPath("/clusters/"+e.vars["malloryHome"])+"?watch=true")
			switch {
			case code == http.StatusOK:
			case code == http.StatusTooManyRequests:
				refused++
				var st metav1.Status
				if err := json.Unmarshal([]byte(body), &st); err != nil || st.Reason != metav1.StatusReasonTooManyRequests || hdr.Get("Retry-After") == "" {
					t.Errorf("refused watch: %v %q Retry-After %q", err, body, hdr.Get("Retry-After"))
				}
			default:
				t.Fatalf("watch %d: %d %s", i, code, body)
			}
		}
		if refused != 10 {
			t.Errorf("%d of mallory's %d watches refused, want the 10 over the cap of %d", refused, fairWatchCap+10, fairWatchCap)
		}
		for i := 0; i < 5; i++ {
			if code, _, body := w.open(e.tokens["alice"], cmPath("/clusters/"+e.vars["aliceHome"])+"?watch=true"); code != http.StatusOK {
				t.Errorf("victim's watch %d: %d %s", i, code, body)
			}
		}
		if failed := victim(10); len(failed) != 0 {
			t.Errorf("victim: %d failed: %s", len(failed), strings.Join(failed, "; "))
		}
		// Closed watches give their place back.
		w.closeAll()
		eventually(t, 30*time.Second, func() error {
			code, _, body := w.open(e.tokens["mallory"], cmPath("/clusters/"+e.vars["malloryHome"])+"?watch=true")
			if code != http.StatusOK {
				return fmt.Errorf("mallory's watch after closing hers: %d %s", code, body)
			}
			return nil
		})
	})

	t.Run("B2+B3/concurrent big lists neither stop the single provider nor fail the victim, and cost their size", func(t *testing.T) {
		// About 27 MB of ConfigMaps in mallory's home, incompressible.
		for i := 0; i < 30; i++ {
			raw := make([]byte, 675<<10)
			_, _ = rand.Read(raw)
			cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-%d"},"data":{"d":%q}}`, i, base64.StdEncoding.EncodeToString(raw))
			if code, body := h.doAs(e.tokens["mallory"], http.MethodPost, cmPath("/clusters/"+e.vars["malloryHome"]), cm); code != http.StatusCreated {
				t.Fatalf("big ConfigMap %d: %d %.300s", i, code, body)
			}
		}
		cpuBefore := cpuTicks(t, h.cmd.Process.Pid)
		var lists, listRefused, listOther atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 38; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 3; j++ {
					code, _ := h.doAs(e.tokens["mallory"], http.MethodGet, cmPath("/clusters/"+e.vars["malloryHome"]), "")
					switch code {
					case http.StatusOK:
						lists.Add(1)
					case http.StatusTooManyRequests:
						listRefused.Add(1)
					default:
						listOther.Add(1)
					}
				}
			}()
		}
		done := make(chan struct{})
		var failed []string
		go func() {
			defer close(done)
			failed = victim(40)
		}()
		wg.Wait()
		<-done
		cpu := float64(cpuTicks(t, h.cmd.Process.Pid)-cpuBefore) / 100
		missed := strings.Count(h.log.String(), leaseMissed)
		kids := pluginChildren(t, h.cmd.Process.Pid, bin)
		t.Logf("attacker: %d lists served, %d refused (429), %d other; victim: %d of 40 failed; lease renewals missed: %d; plugin %v (was %d); hub CPU during the flood: %.1f s",
			lists.Load(), listRefused.Load(), listOther.Load(), len(failed), missed, kids, plugin, cpu)
		if missed != 0 {
			t.Errorf("the hub missed %d lease renewals of the single provider", missed)
		}
		if len(kids) != 1 || kids[0] != plugin {
			t.Errorf("the single provider was restarted: plugin processes %v, was %d", kids, plugin)
		}
		if len(failed) != 0 {
			t.Errorf("victim: %d of 40 failed: %s", len(failed), strings.Join(failed, "; "))
		}
		// B3: the share counts cost, not requests. 38 lists of her 27 MB
		// were "inside" her share of 40 requests; each is now worth the
		// whole share, so most wait past the queue and are refused.
		if listRefused.Load() == 0 {
			t.Errorf("none of mallory's %d concurrent big lists was refused: her share counted requests, not their cost", lists.Load())
		}
	})
}

// watches holds open watch responses.
type watches struct {
	h     *hubProc
	mu    sync.Mutex
	open_ []*http.Response
}

// open starts a watch and keeps it open if it was admitted; it returns the
// code, headers and, if refused, the body.
func (w *watches) open(token, path string) (int, http.Header, string) {
	req, _ := http.NewRequest(http.MethodGet, w.h.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	c := w.h.client()
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header, readAll(resp)
	}
	w.mu.Lock()
	w.open_ = append(w.open_, resp)
	w.mu.Unlock()
	return resp.StatusCode, resp.Header, ""
}

func (w *watches) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.open_ {
		r.Body.Close()
	}
	w.open_ = nil
}

// cpuTicks is the CPU time pid has used, user and system, in clock ticks
// (100 a second on Linux); for the log only.
func cpuTicks(t *testing.T, pid int) int64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return utime + stime
}
