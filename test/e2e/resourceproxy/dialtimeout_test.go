package resourceproxy

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
)

// blackhole is a peer dial that never completes: it returns only when the
// proxy gives up on it (its ctx is done), like a SYN to a peer that drops
// it. inflight counts the dials waiting.
type blackhole struct{ inflight atomic.Int32 }

func (b *blackhole) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	b.inflight.Add(1)
	defer b.inflight.Add(-1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestPeerDialTimeout: every dial to the target hangs. The proxy's 5 s dial
// timeout runs on the injected clock, so the test steps it while a dial
// waits; the list then answers the 503 with Retry-After: 1, and the failed
// dials are counted with reason timeout (not upstream_error). No target
// process is needed: nothing ever connects. If the dial timeout did not
// fire on the clock the request would hang and the test time out; if it
// were classified otherwise the metric assertions fail.
func TestPeerDialTimeout(t *testing.T) {
	e := &env{t: t, clock: clocktesting.NewFakeClock(time.Now()), routes: rp.NewRoutes(), metrics: rp.NewMetrics(),
		ns: &namespaces{m: map[string]bool{}}, secrets: &secrets{m: map[string][]byte{}}}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	kc.AuthInfos["rp"] = &clientcmdapi.AuthInfo{Token: "not-used"}
	kc.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "rp"}
	kc.CurrentContext = "prod"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	e.secrets.put("ops", "prod", b)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	targets := rp.NewTargets(ctx, nil, e.secrets, e.clock, e.metrics, loopbackPolicy(t))
	hole := &blackhole{}
	targets.SetDial(hole.dial)
	e.metrics.WatchPeers(e.routes, targets)
	e.front = httptest.NewServer(rp.NewHandler(e.routes, targets, e.ns, e.metrics, e.clock))
	t.Cleanup(e.front.Close)
	e.route(teamA, rp.AccessOwned, "databases")

	type answer struct {
		code       int
		retryAfter string
		body       string
	}
	done := make(chan answer, 1)
	go func() {
		code, hdr, body, _ := e.rawList(t)
		done <- answer{code, hdr.Get("Retry-After"), body}
	}()
	var got answer
	steps := 0
	deadline := time.Now().Add(90 * time.Second)
wait:
	for {
		select {
		case got = <-done:
			break wait
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("list still waiting after %d steps of %v with %d dials pending", steps, rp.DialTimeout, hole.inflight.Load())
		}
		// Step only while a dial waits, so its timer is registered.
		if hole.inflight.Load() > 0 {
			e.clock.Step(rp.DialTimeout)
			steps++
		}
	}
	t.Logf("list answered after %d clock steps of %v", steps, rp.DialTimeout)
	if got.code != 503 || got.retryAfter != "1" || !strings.Contains(got.body, `target \"prod\" for databases.example.com/v1 is unavailable`) {
		t.Fatalf("hanging dials: %d Retry-After %q %s", got.code, got.retryAfter, got.body)
	}
	if n := e.metric("wharf_resource_proxy_peer_dial_failures_total", map[string]string{"target": targetName, "reason": "timeout"}); n < 1 {
		t.Errorf("dial failures (timeout) = %v, want ≥ 1", n)
	}
	if n := e.metric("wharf_resource_proxy_peer_dial_failures_total", map[string]string{"target": targetName, "reason": "upstream_error"}); n != 0 {
		t.Errorf("dial failures (upstream_error) = %v, want 0: a hanging dial is a timeout", n)
	}
	if n := e.metric("wharf_resource_proxy_requests_total", map[string]string{"target": targetName, "verb": "list", "code": "503", "reason": "timeout"}); n != 1 {
		t.Errorf("list 503s with reason timeout = %v, want 1", n)
	}
}
