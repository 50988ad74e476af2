package ha

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// soakDuration is 30 s, or WHARF_SOAK (make soak: 5m).
func soakDuration(t *testing.T) (time.Duration, int) {
	if v := os.Getenv("WHARF_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("WHARF_SOAK: %v", err)
		}
		return d, 100
	}
	return 30 * time.Second, 24
}

// TestSoak runs the soak on a bed of its own, in parallel with TestHA's
// fault cases: its hubs have not just been restarted by them (a replica
// restarted moments before would still be warming up its caches), and the
// package's run is shorter by the soak.
func TestSoak(t *testing.T) {
	t.Parallel()
	b := newBed(t)
	t.Cleanup(func() {
		if bad := overlaps(servingIntervals(t, b.servingLog)); len(bad) > 0 {
			t.Errorf("two singleprobe instances served at once:\n%s", strings.Join(bad, "\n"))
		}
	})
	soak(t, b)
}

// soak runs mixed load through haproxy with no fault: CRUD and watches
// across the workspaces, singleprobe requests, server-sent events and
// websockets through the backend proxy (and the forwarding hop, for the
// replica that does not hold it), and service-account tokens minted and
// used, and logins: the hub's OIDC browser login, the portal's token
// sign-in and `wharf login` with kubectl. Every request must succeed, and the hubs' RSS, goroutines and
// open files must stay flat.
func soak(t *testing.T, b *bed) {
	d, nws := soakDuration(t)
	ws := b.createWorkspaces(t, b.lb.URL, "soak", nws)
	b.lb.waitAllUp(t, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// One pool for all the streams, as a browser has: a client per stream
	// would leave an idle connection open on a hub each time.
	b.sseClient = b.httpClient()
	b.sseClient.Timeout = 30 * time.Second
	var samplers []*sampler
	for _, h := range b.hubs {
		samplers = append(samplers, b.startSampler(ctx, h, min(max(d/30, time.Second), 5*time.Second)))
	}
	ld := b.startLoad(t, b.lb.URL, loadSpec{writers: 6, workspaces: ws, watched: ws[:8], mixed: true, pause: 20 * time.Millisecond})
	p := b.startProber(t, b.lb.URL)
	var wg sync.WaitGroup
	wg.Go(func() { loop(ctx, ld.l, "sse", func() error { return b.sse(ctx) }) })
	wg.Go(func() { loop(ctx, ld.l, "websocket", func() error { return b.websocketEcho(ctx) }) })
	wg.Go(func() { b.serviceAccountLoop(ctx, t, ws[0], ld.l) })
	// Logins, paced as people log in (each one also reads through its
	// session or token and, for sessions, logs out). A CLI login runs
	// three processes (wharf login, kubectl, wharf credential): fewer of
	// them, to leave the CPU to the hubs and etcd.
	lg := b.newLogins(ctx, t, ws[1])
	tools := cliTools{wharf: testutil.Binary(t, "wharf"), kubectl: kube.KubectlPath(t)}
	wg.Go(func() { paced(ctx, ld.l, "login browser", time.Second, lg.browserLogin) })
	wg.Go(func() { paced(ctx, ld.l, "login token-session", time.Second, lg.tokenSession) })
	wg.Go(func() {
		paced(ctx, ld.l, "login cli", 4*time.Second, func(ctx context.Context) error { return lg.cliLogin(ctx, tools) })
	})
	// Heap profiles at the end of warm-up and at the end tell what grew
	// in between (go tool pprof -base <hub>-steady.pb.gz <hub>-end.pb.gz).
	prof := os.Getenv("WHARF_SOAK_PROFILES")
	heapProfiles := func(label string) {
		if prof == "" {
			return
		}
		for _, sm := range samplers {
			if p, err := sm.saveHeapProfile(prof, label); err != nil {
				t.Logf("heap profile: %v", err)
			} else {
				t.Logf("heap profile %s", p)
			}
		}
	}
	warm := warmUp(d)
	time.Sleep(warm)
	heapProfiles("steady")
	time.Sleep(d - warm)
	heapProfiles("end")
	cancel()
	wg.Wait()
	p.stop()
	checkLoad(t, b, ld, b.hubs[0], ws)
	p.mu.Lock()
	failed := 0
	for _, a := range p.answers {
		if !a.ok {
			failed++
			record(t, "singleprobe request failed at "+a.at.Format("15:04:05.000"), a.why)
		}
	}
	record(t, "singleprobe requests (ok/failed)", fmt.Sprintf("%d/%d", len(p.answers)-failed, failed))
	p.mu.Unlock()
	ld.l.mu.Lock()
	for _, k := range []string{"get", "sse", "websocket", "serviceaccount token", "serviceaccount use",
		"login browser", "login token-session", "login cli"} {
		record(t, k+" ok", ld.l.opsOK[k])
		// A kind that never succeeded did not run: the soak did not
		// test it, errors or not.
		if ld.l.opsOK[k] == 0 {
			t.Errorf("no %s succeeded in the soak", k)
		}
	}
	ld.l.mu.Unlock()
	if n := ld.l.errorCount() + failed; n != 0 {
		t.Errorf("%d errors in the soak, want 0: %v", n, ld.l.errLog)
	}
	for _, sm := range samplers {
		if prof != "" {
			if err := sm.writeSamples(prof); err != nil {
				t.Log(err)
			}
		}
		st := sm.steady(warm)
		name := sm.h.Name
		record(t, name+" samples (after warm-up of "+warm.String()+")", len(st))
		for _, sg := range signals {
			tr := trendOf(st, sg.get)
			h1, h2 := halves(st, sg.get)
			record(t, name+" "+sg.name+" mean / slope per min ± 2se", tr)
			record(t, name+" "+sg.name+" steady halves (mean)", fmt.Sprintf("%.1f → %.1f", h1, h2))
			switch {
			case sg.frac > 0 && sg.memory && warm < levelOff:
				record(t, name+" "+sg.name+" not judged", "the steady part starts before "+levelOff.String()+", when memory levels off; make soak judges it")
			case sg.frac > 0:
				flat(t, name+" "+sg.name, tr, d-warm, sg.frac)
			}
		}
	}
}

// warmUp is the part of a soak of d not judged: the hubs' watch caches
// fill their event history (sized to the last 75 s of events) and the
// connection and buffer pools fill. The 5-minute soak's RSS and live heap
// level off after 90–150 s; half the run, at most 150 s, is left out.
func warmUp(d time.Duration) time.Duration { return max(d/4, min(150*time.Second, d/2)) }

// flat fails a series that grows beyond noise over the steady part: its
// slope must be significant (more than two standard errors above zero)
// and the growth it projects over the steady part more than three
// residual deviations plus frac of its mean (a heap grows in steps).
// A trend that passes only by one of the two is printed as such.
func flat(t *testing.T, what string, tr trend, over time.Duration, frac float64) {
	t.Helper()
	grows, significant, growth, bound := judge(tr, over, frac)
	switch {
	case grows:
		t.Errorf("%s grows %.1f over %s (slope %.2f ± %.2f/min), beyond noise %.1f", what, growth, over, tr.perMin, 2*tr.seMin, bound)
	case significant:
		t.Logf("%s: slope %.2f ± %.2f/min is above zero, but the %.1f it projects over %s is within noise %.1f", what, tr.perMin, 2*tr.seMin, growth, over, bound)
	}
}

// judge is flat's verdict: grows when the slope is significant and its
// projected growth beyond the bound.
func judge(tr trend, over time.Duration, frac float64) (grows, significant bool, growth, bound float64) {
	growth = tr.perMin * over.Minutes()
	bound = 3*tr.noise + frac*tr.mean
	significant = tr.perMin-2*tr.seMin > 0
	return significant && growth > bound, significant, growth, bound
}

// loop runs one request kind back to back until ctx ends.
func loop(ctx context.Context, l *ledger, kind string, f func() error) {
	for ctx.Err() == nil {
		err := f()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			l.fail(kind, nil, err)
			time.Sleep(100 * time.Millisecond)
		default:
			l.ok(kind)
		}
	}
}

// sse reads ten events from singleprobe through the load balancer.
func (b *bed) sse(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.lb.URL+"/services/providers/singleprobe/events?n=10", nil)
	req.Header.Set("Authorization", "Bearer "+loadToken)
	req.Header.Set("X-Wharf-Workspace", "root")
	resp, err := b.sseClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sse: %s", resp.Status)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: event ") {
			n++
		}
	}
	if n != 10 {
		return fmt.Errorf("sse: %d of 10 events", n)
	}
	return nil
}

// websocketEcho echoes five messages through the load balancer.
func (b *bed) websocketEcho(ctx context.Context) error {
	dl := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: b.ca.pool()}, HandshakeTimeout: 10 * time.Second}
	u := "wss" + strings.TrimPrefix(b.lb.URL, "https") + "/services/providers/singleprobe/ws"
	c, resp, err := dl.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + loadToken}, "X-Wharf-Workspace": {"root"}})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("websocket dial: %s: %w", resp.Status, err)
		}
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i := range 5 {
		msg := fmt.Sprintf("soak %d", i)
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			return err
		}
		if _, got, err := c.ReadMessage(); err != nil || string(got) != msg {
			return fmt.Errorf("websocket echo %q: %q %v", msg, got, err)
		}
	}
	return c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
}

// serviceAccountLoop mints a token for a ServiceAccount every few seconds
// and uses it (SelfSubjectReview) through the load balancer in between.
func (b *bed) serviceAccountLoop(ctx context.Context, t *testing.T, ws string, l *ledger) {
	admin, err := kubernetes.NewForConfig(b.restConfig(b.lb.URL, ws))
	if err != nil {
		t.Error(err)
		return
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "soak"}}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		l.fail("serviceaccount create", nil, err)
		return
	}
	for ctx.Err() == nil {
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "soak", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.fail("serviceaccount token", nil, err)
			time.Sleep(time.Second)
			continue
		}
		l.ok("serviceaccount token")
		cfg := b.restConfig(b.lb.URL, ws)
		cfg.BearerToken = tr.Status.Token
		as, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Error(err)
			return
		}
		for i := 0; i < 20 && ctx.Err() == nil; i++ {
			r, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			switch {
			case ctx.Err() != nil:
			case err != nil:
				l.fail("serviceaccount use", nil, err)
			case r.Status.UserInfo.Username != "system:serviceaccount:default:soak":
				l.fail("serviceaccount use", nil, fmt.Errorf("token authenticated as %q", r.Status.UserInfo.Username))
			default:
				l.ok("serviceaccount use")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
