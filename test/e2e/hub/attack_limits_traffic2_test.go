package hub

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 24, third outside review (docs/reviews/issue-24-review-3.md):
// breaks C-D, C-G and C-H, where the traffic budget
// (--tenant-traffic-bytes-per-cpu after --tenant-traffic-burst-bytes) was
// charged after the fact, at the compressed size, without watches and
// without provider routes; and attempts 8, 9, 17 and 18, which held.
//
// The break rows run a hub with a small budget (traffic2PerCPU a second
// per CPU after traffic2Burst) and count, as the client, the bytes the
// attacker received in a window of about traffic2Window. The bound is
// three times what the budget allows in the window actually measured:
// burst + rate × elapsed. A loaded machine only makes the hub slower, so
// it can only lower what is counted; no time is asserted.

const traffic2Tokens = `mallory-token,mallory,mallory-uid,"devs"
carol-token,carol,carol-uid,"devs"
dave-token,dave,dave-uid,"devs"
erin-token,erin,erin-uid,"devs"
victor-token,victor,victor-uid,"devs"
hubadmin-token,hubadmin,hubadmin-uid,"devs"
`

const (
	traffic2PerCPU = 256 << 10
	traffic2Burst  = 4 << 20
	traffic2Window = 10 * time.Second
	// traffic2Value is the size of each big object: the review's 900 KB.
	traffic2Value = 900000
)

// startTraffic2Hub starts a hub running the sample hello provider, with
// the people above (hubadmin is a hub admin), plus args.
func startTraffic2Hub(t *testing.T, args ...string) *attackEnv {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(traffic2Tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	hello := providerBinary(t, "./sdk/examples/hello", "hello")
	dir, err := os.MkdirTemp("", "t2") // short: the provider's socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	h := startHub(t, hubOptions{dataDir: dir, extraArgs: append([]string{"--token-auth-file", tokens, "--provider", "hello=" + hello,
		"--admin-user", "hubadmin"}, args...)})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{"admin": h.Token}}
	for _, who := range []string{"hubadmin", "mallory", "carol", "dave", "erin", "victor"} {
		e.tokens[who] = who + "-token"
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK || (who != "hubadmin" && w.Home == nil) {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		if w.Home != nil {
			e.vars[who+"Home"] = w.Home.Path
		}
	}
	return e
}

// traffic2Bound is three times what the budget lets one tenant move in
// elapsed: the burst and the rate over the window.
func traffic2Bound(elapsed time.Duration) int64 {
	rate := float64(traffic2PerCPU * runtime.NumCPU())
	return 3 * int64(traffic2Burst+rate*elapsed.Seconds())
}

// t2Reply is one answer: its code and the bytes of its body read.
type t2Reply struct {
	code  int
	bytes int64
	err   error
}

// t2Call sends method path as token with hdr and reads the body, adding
// what it reads to *in as it goes; a watch is read until ctx ends.
func t2Call(ctx context.Context, c *http.Client, h *hubProc, token, method, path, body string, hdr map[string]string, in *atomic.Int64) t2Reply {
	req, err := http.NewRequestWithContext(ctx, method, h.URL+path, strings.NewReader(body))
	if err != nil {
		return t2Reply{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return t2Reply{err: err}
	}
	defer resp.Body.Close()
	r := t2Reply{code: resp.StatusCode}
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		r.bytes += int64(n)
		if in != nil {
			in.Add(int64(n))
		}
		if err != nil {
			if err != io.EOF {
				r.err = err
			}
			return r
		}
	}
}

// bigCM is a ConfigMap holding one value of traffic2Value bytes.
func bigCM(name string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"v":"` + strings.Repeat("z", traffic2Value) + `"}}`
}

// codeCounts counts answers by code ("ERR" for transport errors).
type codeCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *codeCounts) add(r t2Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	k := fmt.Sprint(r.code)
	if r.code == 0 {
		k = "ERR"
	}
	c.m[k]++
}

func (c *codeCounts) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *codeCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.m)
}

// floodUntil runs workers, each calling do again as soon as it returns, until
// ctx ends.
func floodUntil(ctx context.Context, workers int, do func(ctx context.Context)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				do(ctx)
			}
		}()
	}
	return &wg
}

// victimCRUD is victor's loop meanwhile: create, get and list ConfigMaps
// in his home until ctx ends; it returns his failures and how many
// ConfigMaps he created.
func victimCRUD(ctx context.Context, e *attackEnv, c *http.Client, prefix string) (failed []string, created int) {
	base := cmPath("/clusters/" + e.vars["victorHome"])
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		for _, s := range []struct{ method, path, body string }{
			// The list names one ConfigMap: his whole list, growing with
			// every create, would take him past the break rows' small
			// budget by itself.
			{http.MethodPost, base, cmJSON(name)}, {http.MethodGet, base + "/" + name, ""}, {http.MethodGet, base + "?fieldSelector=metadata.name%3D" + name, ""},
		} {
			// Not the flood's context: the victim's last requests finish.
			r := t2Call(context.Background(), c, e.h, e.tokens["victor"], s.method, s.path, s.body, nil, nil)
			if r.code != http.StatusOK && r.code != http.StatusCreated {
				failed = append(failed, fmt.Sprintf("%s %s: %d %v", s.method, s.path, r.code, r.err))
			} else if s.method == http.MethodPost {
				created++
			}
		}
	}
	return failed, created
}

func mustAs(t *testing.T, e *attackEnv, want int, who, method, path, body string) {
	t.Helper()
	if code, b := e.as(who, method, path, body, nil); code != want {
		t.Fatalf("%s %s as %s: %d, want %d: %.300s", method, path, who, code, want, b)
	}
}

// TestAttackLimitsTraffic2: the break rows C-D, C-G and C-H, one hub with
// a small traffic budget, each row a tenant of its own.
func TestAttackLimitsTraffic2(t *testing.T) {
	t.Parallel()
	e := startTraffic2Hub(t, fmt.Sprintf("--tenant-traffic-bytes-per-cpu=%d", traffic2PerCPU), fmt.Sprintf("--tenant-traffic-burst-bytes=%d", traffic2Burst))
	h := e.h
	c := provClient(h)
	defer c.CloseIdleConnections()

	t.Run("r24c:C-D/watches of a big object are charged as they stream; the victim's watch and CRUD are untouched", func(t *testing.T) {
		mHome := "/clusters/" + e.vars["malloryHome"]
		// Stored by the hub admin (exempt): mallory's budget is whole
		// when the attack starts.
		mustAs(t, e, http.StatusCreated, "hubadmin", http.MethodPost, cmPath(mHome), bigCM("amp"))
		// victor watches his own ConfigMaps from now.
		vBase := cmPath("/clusters/" + e.vars["victorHome"])
		code, body := e.as("victor", http.MethodGet, vBase, "", nil)
		if code != http.StatusOK {
			t.Fatalf("victor's list: %d %s", code, body)
		}
		rv := between(body, `"resourceVersion":"`, `"`)
		vctx, vstop := context.WithCancel(t.Context())
		defer vstop()
		vreq, _ := http.NewRequestWithContext(vctx, http.MethodGet, h.URL+vBase+"?watch=1&resourceVersion="+rv, nil)
		vreq.Header.Set("Authorization", "Bearer victor-token")
		vresp, err := c.Do(vreq)
		if err != nil || vresp.StatusCode != http.StatusOK {
			t.Fatalf("victor's watch: %v %v", err, vresp)
		}
		var vevents lockedBuilder
		vdone := make(chan error, 1)
		go func() {
			_, err := io.Copy(&vevents, vresp.Body)
			vdone <- err
		}()

		// The attack: 30 watches of amp (each sent the whole object on
		// every change), watched again as soon as they end, and tiny
		// patches of amp from two clients.
		ctx, stop := context.WithTimeout(t.Context(), traffic2Window)
		defer stop()
		start := time.Now()
		var in atomic.Int64
		var watches, patches codeCounts
		var ended atomic.Int64
		watch := cmPath(mHome) + "?watch=1&fieldSelector=metadata.name%3Damp&resourceVersion=0"
		wwg := floodUntil(ctx, 30, func(ctx context.Context) {
			r := t2Call(ctx, c, h, e.tokens["mallory"], http.MethodGet, watch, "", nil, &in)
			watches.add(r)
			if r.code == http.StatusOK && ctx.Err() == nil {
				ended.Add(1) // the hub ended it
			}
		})
		var n atomic.Int64
		pwg := floodUntil(ctx, 2, func(ctx context.Context) {
			r := t2Call(ctx, c, h, e.tokens["mallory"], http.MethodPatch, cmPath(mHome)+"/amp",
				fmt.Sprintf(`{"metadata":{"annotations":{"n":"%d"}}}`, n.Add(1)),
				map[string]string{"Content-Type": "application/merge-patch+json", "Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"}, nil)
			patches.add(r)
		})
		failed, created := victimCRUD(ctx, e, c, "cd")
		wwg.Wait()
		pwg.Wait()
		elapsed, got := time.Since(start), in.Load()
		// His watch stays open and sees each of his ConfigMaps (the last
		// events may still be on their way).
		missed := func() error {
			for i := 0; i < created; i++ {
				if !strings.Contains(vevents.String(), fmt.Sprintf(`"name":"cd-%d"`, i)) {
					return fmt.Errorf("victor's watch has not seen cd-%d", i)
				}
			}
			return nil
		}
		if err := waitFor(30*time.Second, missed); err != nil {
			t.Errorf("%v (it must stay open through her flood)", err)
		}
		select {
		case err := <-vdone:
			t.Errorf("victor's watch was ended during her flood: %v", err)
		default:
		}
		vstop()
		t.Logf("%.1fs: mallory's watches received %d MB (bound %d MB): watch answers %v, ended by the hub %d, patches %v; victor created %d, failed %d",
			elapsed.Seconds(), got>>20, traffic2Bound(elapsed)>>20, &watches, ended.Load(), &patches, created, len(failed))
		if got > traffic2Bound(elapsed) {
			t.Errorf("mallory's watches received %d bytes in %v, over 3 × (burst + rate × window) = %d (C-D: watch events not charged)", got, elapsed, traffic2Bound(elapsed))
		}
		if ended.Load() == 0 && watches.get("429") == 0 {
			t.Errorf("none of mallory's watches was ended or refused while she was over her budget: %v", &watches)
		}
		if len(failed) != 0 {
			t.Errorf("victor: %d failed: %s", len(failed), strings.Join(failed, "; "))
		}
	})

	t.Run("r24c:C-G/a provider route's big answers are charged to the caller's tenant", func(t *testing.T) {
		cHome := "/clusters/" + e.vars["carolHome"]
		mustAs(t, e, http.StatusCreated, "hubadmin", http.MethodPost, cHome+"/apis/providers.wharf.dev/v1alpha1/providerbindings",
			`{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"hello"},"spec":{"provider":"hello"}}`)
		greetings := cHome + "/apis/hello.wharf.dev/v1alpha1/namespaces/default/greetings"
		eventually(t, 90*time.Second, func() error {
			if code, body := e.as("hubadmin", http.MethodGet, greetings, "", nil); code != http.StatusOK {
				return fmt.Errorf("greetings not served in carol's home yet: %d %.200s", code, body)
			}
			return nil
		})
		// 700 KB messages: hello's reply repeats the message, and the
		// Greeting must still fit in one etcd request (1.5 MiB).
		const message = 700000
		for i := 0; i < 3; i++ {
			mustAs(t, e, http.StatusCreated, "hubadmin", http.MethodPost, greetings,
				fmt.Sprintf(`{"apiVersion":"hello.wharf.dev/v1alpha1","kind":"Greeting","metadata":{"name":"big%d"},"spec":{"message":%q}}`, i, strings.Repeat("z", message)))
		}
		// The provider's cache has them: one answer is 2.1-4.2 MB. The
		// provider is a tenant of its own with the same small budget, so
		// its informer may take a while; the hub admin asks in carol's
		// home.
		eventually(t, 120*time.Second, func() error {
			r := t2Call(t.Context(), c, h, e.tokens["hubadmin"], http.MethodGet, "/services/providers/hello/greetings", "",
				map[string]string{"X-Wharf-Workspace": e.vars["carolHome"]}, nil)
			if r.code != http.StatusOK || r.bytes < 3*message {
				return fmt.Errorf("hello's /greetings in carol's home: %d, %d bytes", r.code, r.bytes)
			}
			return nil
		})
		ctx, stop := context.WithTimeout(t.Context(), traffic2Window)
		defer stop()
		start := time.Now()
		var in atomic.Int64
		var codes codeCounts
		wg := floodUntil(ctx, 40, func(ctx context.Context) {
			codes.add(t2Call(ctx, c, h, e.tokens["carol"], http.MethodGet, "/services/providers/hello/greetings", "", nil, &in))
		})
		// victor meanwhile: the provider and CRUD.
		var failed []string
		for ctx.Err() == nil {
			if r := t2Call(context.Background(), c, h, e.tokens["victor"], http.MethodGet, "/services/providers/hello/whoami", "", nil, nil); r.code != http.StatusOK {
				failed = append(failed, fmt.Sprintf("whoami: %d %v", r.code, r.err))
			}
			f, _ := victimCRUD(ctx, e, c, fmt.Sprintf("cg-%d", len(failed)))
			failed = append(failed, f...)
		}
		wg.Wait()
		elapsed, got := time.Since(start), in.Load()
		t.Logf("%.1fs: carol received %d MB from the provider route (bound %d MB): %v; victor failed %d", elapsed.Seconds(), got>>20, traffic2Bound(elapsed)>>20, &codes, len(failed))
		if got > traffic2Bound(elapsed) {
			t.Errorf("carol received %d bytes from a provider route in %v, over 3 × (burst + rate × window) = %d (C-G: not counted by any budget)", got, elapsed, traffic2Bound(elapsed))
		}
		if len(failed) != 0 {
			t.Errorf("victor: %d failed: %s", len(failed), strings.Join(failed, "; "))
		}
	})

	t.Run("r24c:C-H/concurrent big lists, plain or gzipped, stay within the budget; the victim is served", func(t *testing.T) {
		// 4 ConfigMaps of 900 KB each in dave's and erin's homes: each
		// list is ~3.6 MB of JSON. 'z' compresses ~1000-fold.
		for _, who := range []string{"dave", "erin"} {
			for i := 0; i < 4; i++ {
				mustAs(t, e, http.StatusCreated, "hubadmin", http.MethodPost, cmPath("/clusters/"+e.vars[who+"Home"]), bigCM(fmt.Sprintf("b%d", i)))
			}
		}
		listSize := t2Call(t.Context(), c, h, e.tokens["hubadmin"], http.MethodGet, cmPath("/clusters/"+e.vars["erinHome"]), "", nil, nil).bytes
		if listSize < 4*traffic2Value {
			t.Fatalf("erin's list is %d bytes, want at least %d", listSize, 4*traffic2Value)
		}
		ctx, stop := context.WithTimeout(t.Context(), traffic2Window)
		defer stop()
		start := time.Now()
		var plainIn atomic.Int64
		var plain, gzipped codeCounts
		var whole atomic.Int64
		pwg := floodUntil(ctx, 40, func(ctx context.Context) {
			plain.add(t2Call(ctx, c, h, e.tokens["dave"], http.MethodGet, cmPath("/clusters/"+e.vars["daveHome"]), "", nil, &plainIn))
		})
		gwg := floodUntil(ctx, 40, func(ctx context.Context) {
			r := t2Call(ctx, c, h, e.tokens["erin"], http.MethodGet, cmPath("/clusters/"+e.vars["erinHome"]), "", map[string]string{"Accept-Encoding": "gzip"}, nil)
			gzipped.add(r)
			if r.code == http.StatusOK && r.err == nil {
				whole.Add(1)
			}
		})
		failed, _ := victimCRUD(ctx, e, c, "ch")
		pwg.Wait()
		gwg.Wait()
		elapsed := time.Since(start)
		built := whole.Load() * listSize
		bound := traffic2Bound(elapsed)
		t.Logf("%.1fs: dave received %d MB (bound %d MB) %v; erin got %d whole gzipped lists, %d MB of JSON %v; victor failed %d",
			elapsed.Seconds(), plainIn.Load()>>20, bound>>20, &plain, whole.Load(), built>>20, &gzipped, len(failed))
		if plainIn.Load() > bound {
			t.Errorf("dave's 40 concurrent lists received %d bytes in %v, over 3 × (burst + rate × window) = %d (C-H)", plainIn.Load(), elapsed, bound)
		}
		if built > bound {
			t.Errorf("erin's gzipped lists were %d bytes of JSON in %v, over 3 × (burst + rate × window) = %d (C-H: counted compressed)", built, elapsed, bound)
		}
		if plain.get("429")+gzipped.get("429") == 0 {
			t.Errorf("no list of dave's or erin's was refused: %v %v", &plain, &gzipped)
		}
		if len(failed) != 0 {
			t.Errorf("victor: %d failed: %s", len(failed), strings.Join(failed, "; "))
		}
	})
}

// lockedBuilder is a strings.Builder written by one goroutine and read
// by another.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// between returns what follows the first from in s, up to to.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// TestAttackLimitsTraffic2Held: attempts 8, 9, 17 and 18 of the third
// review, which held, on a hub with the default budgets.
func TestAttackLimitsTraffic2Held(t *testing.T) {
	t.Parallel()
	e := startTraffic2Hub(t)
	h := e.h
	c := provClient(h)
	defer c.CloseIdleConnections()
	home := func(who string) string { return "/clusters/" + e.vars[who+"Home"] }

	documents := func(t *testing.T, paths []string, accept string, hdr map[string]string) {
		ctx, stop := context.WithTimeout(t.Context(), 5*time.Second)
		defer stop()
		var codes codeCounts
		var i atomic.Int64
		wg := floodUntil(ctx, 40, func(ctx context.Context) {
			hd := map[string]string{"Accept": accept}
			for k, v := range hdr {
				hd[k] = v
			}
			r := t2Call(ctx, c, h, e.tokens["carol"], http.MethodGet, paths[int(i.Add(1))%len(paths)], "", hd, nil)
			if ctx.Err() == nil {
				codes.add(r)
			}
		})
		failed, created := victimCRUD(ctx, e, c, fmt.Sprintf("d%d", time.Now().UnixNano()%100000))
		wg.Wait()
		t.Logf("flood %v; victor created %d, failed %d", &codes, created, len(failed))
		for k := range codes.m {
			if k != "200" && k != "429" {
				t.Errorf("the flood got %s answers: %v", k, &codes)
			}
		}
		if codes.get("200") == 0 {
			t.Errorf("no document was served: %v", &codes)
		}
		if len(failed) != 0 || created == 0 {
			t.Errorf("victor created %d, failed %d: %s", created, len(failed), strings.Join(failed, "; "))
		}
	}
	t.Run("r24c:8/an OpenAPI v2 flood (protobuf, gzip) leaves the victim unhurt", func(t *testing.T) {
		documents(t, []string{home("carol") + "/openapi/v2"}, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", map[string]string{"Accept-Encoding": "gzip"})
	})
	t.Run("r24c:9/an OpenAPI v3 and discovery flood leaves the victim unhurt", func(t *testing.T) {
		documents(t, []string{home("carol") + "/openapi/v3/api/v1", home("carol") + "/openapi/v3/apis/rbac.authorization.k8s.io/v1",
			home("carol") + "/apis", home("carol") + "/openapi/v3/apis/apiextensions.k8s.io/v1"}, "application/json", nil)
	})

	streams := func(t *testing.T, path string, upgrade bool, ok int) {
		eventually(t, 90*time.Second, func() error {
			if r := t2Call(t.Context(), c, h, e.tokens["victor"], http.MethodGet, "/services/providers/hello/whoami", "", nil, nil); r.code != http.StatusOK {
				return fmt.Errorf("hello not serving yet: %d", r.code)
			}
			return nil
		})
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		var codes codeCounts
		var wg sync.WaitGroup
		answered := make(chan struct{}, 600)
		for i := 0; i < 600; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+path, nil)
				req.Header.Set("Authorization", "Bearer mallory-token")
				if upgrade {
					req.Header.Set("Connection", "Upgrade")
					req.Header.Set("Upgrade", "websocket")
					req.Header.Set("Sec-WebSocket-Version", "13")
					req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
				}
				resp, err := c.Do(req)
				if err != nil {
					codes.add(t2Reply{err: err})
					answered <- struct{}{}
					return
				}
				codes.add(t2Reply{code: resp.StatusCode})
				answered <- struct{}{}
				if resp.StatusCode != ok {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return
				}
				// Held open, never read, until the row ends.
				<-ctx.Done()
				resp.Body.Close()
			}()
		}
		for i := 0; i < 600; i++ {
			<-answered
		}
		// victor meanwhile, on the provider route and the API.
		var failed []string
		for i := 0; i < 5; i++ {
			if r := t2Call(t.Context(), c, h, e.tokens["victor"], http.MethodGet, "/services/providers/hello/whoami", "", nil, nil); r.code != http.StatusOK {
				failed = append(failed, fmt.Sprintf("whoami: %d %v", r.code, r.err))
			}
		}
		vctx, vstop := context.WithTimeout(t.Context(), 2*time.Second)
		f, _ := victimCRUD(vctx, e, c, fmt.Sprintf("s%d", time.Now().UnixNano()%100000))
		vstop()
		failed = append(failed, f...)
		stop()
		wg.Wait()
		t.Logf("600 streams: %v; victor failed %d", &codes, len(failed))
		if codes.get(fmt.Sprint(ok)) != 40 || codes.get("429") != 560 {
			t.Errorf("600 streams of mallory's: %v, want 40 admitted (%d) and 560 refused (429)", &codes, ok)
		}
		if len(failed) != 0 {
			t.Errorf("victor: %s", strings.Join(failed, "; "))
		}
	}
	t.Run("r24c:17/600 SSE streams on a provider route: 40 admitted, the rest 429", func(t *testing.T) {
		streams(t, "/services/providers/hello/events", false, http.StatusOK)
	})
	t.Run("r24c:18/600 unread websockets on a provider route: 40 admitted, the rest 429", func(t *testing.T) {
		streams(t, "/services/providers/hello/echo", true, http.StatusSwitchingProtocols)
	})
}
