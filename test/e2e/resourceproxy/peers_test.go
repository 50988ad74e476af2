package resourceproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
)

// listSlice lists the kubernetes EndpointSlice with both replicas again,
// as a lagging endpoint reconciler would leave it after a replica died,
// so the proxy keeps dialing the dead one. It writes through replica i.
func (e *env) listBothReplicas(t *testing.T) {
	t.Helper()
	cs := e.kube.Clientset(t)
	api := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	eventually(t, "rewrite endpointslice", func() error {
		s, err := api.Get(context.Background(), "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := true
		s.Endpoints = nil
		for i := range e.kube.Replicas() {
			host, _, _ := net.SplitHostPort(e.kube.ReplicaHost(i))
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		_, err = api.Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	})
}

func (e *env) peers(state string) float64 {
	return e.metric("wharf_resource_proxy_peers", map[string]string{"target": targetName, "group_version": group + "/v1", "state": state})
}

// rawList lists team-a's databases with a plain HTTP call, to see the
// status, headers and body of a failure.
func (e *env) rawList(t *testing.T) (int, http.Header, string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := (&http.Client{Transport: asHub{rt: http.DefaultTransport, cl: teamA}}).Get(e.front.URL + "/apis/" + group + "/v1/namespaces/apps/databases")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, string(b), time.Since(start)
}

// TestPeerHealth stops real kube-apiserver replicas under the proxy: one
// is quarantined after three failed dials while requests keep succeeding;
// with both gone callers get a fast 503 with Retry-After: 1; past 60 s of
// dropped peer watch the list is stale; after restart the trial dial
// brings the peers back. The 20 s and 60 s run on the fake clock.
func TestPeerHealth(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	e.ns.add(teamA, "apps")
	a := e.dyn(teamA).Namespace("apps")
	if _, err := a.Create(ctx, db("a1", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	eventually(t, "two healthy peers", func() error {
		if h := e.peers("healthy"); h != 2 {
			return fmt.Errorf("healthy = %v", h)
		}
		return nil
	})

	// One replica down.
	if err := e.kube.StopReplica(1); err != nil {
		t.Fatal(err)
	}
	e.listBothReplicas(t)
	eventually(t, "dead replica republished", func() error {
		if h := e.peers("healthy"); h != 2 {
			return fmt.Errorf("healthy = %v", h)
		}
		return nil
	})
	for i := 0; e.peers("quarantined") < 1; i++ {
		if i > 30 {
			t.Fatalf("no quarantine after %d requests", i)
		}
		if _, err := a.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("list %d with one replica down: %v", i, err)
		}
	}
	if got := e.metric("wharf_resource_proxy_peer_dial_failures_total", map[string]string{"target": targetName, "reason": "upstream_error"}); got != rp.QuarantineThreshold {
		t.Errorf("dial failures = %v, want exactly %d before the quarantine", got, rp.QuarantineThreshold)
	}
	if got := e.metric("wharf_resource_proxy_peer_quarantines_total", map[string]string{"target": targetName}); got != 1 {
		t.Errorf("quarantines = %v, want 1", got)
	}
	for i := range 5 {
		if _, err := a.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("list %d while quarantined: %v", i, err)
		}
	}

	// Both down: the fixture leaves the slice as it was.
	if err := e.kube.StopReplica(0); err != nil {
		t.Fatal(err)
	}
	for i := 0; e.peers("quarantined") < 2; i++ {
		if i > 30 {
			t.Fatalf("second peer not quarantined after %d requests", i)
		}
		if code, _, body, _ := e.rawList(t); code != 503 {
			t.Fatalf("with both down: %d %s", code, body)
		}
	}
	code, hdr, body, took := e.rawList(t)
	t.Logf("503 while every peer is quarantined took %v", took)
	if code != 503 || hdr.Get("Retry-After") != "1" || !strings.Contains(body, `target \"prod\" for databases.example.com/v1 is unavailable`) {
		t.Fatalf("all quarantined: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	if got := e.metric("wharf_resource_proxy_requests_total", map[string]string{"target": targetName, "verb": "list", "code": "503", "reason": "all_quarantined"}); got < 1 {
		t.Errorf("all_quarantined 503s = %v", got)
	}
	if got := e.metric("wharf_resource_proxy_peer_quarantines_total", map[string]string{"target": targetName}); got != 2 {
		t.Errorf("quarantines = %v, want 2", got)
	}

	// Discovery stays available while the target is down.
	resp, err := (&http.Client{Transport: asHub{rt: http.DefaultTransport, cl: teamA}}).Get(e.front.URL + "/apis/" + group + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	disc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(disc), `"verbs":["get"]`) {
		t.Fatalf("discovery with the target down: %d %s", resp.StatusCode, disc)
	}
	if got := e.metric("wharf_resource_proxy_discovery_fallbacks_total", map[string]string{"target": targetName, "reason": "all_quarantined"}); got != 1 {
		t.Errorf("discovery fallbacks (all_quarantined) = %v, want 1", got)
	}

	// The peer watch is down too: 60 s after its drop the list is stale.
	// The clock is stepped until a request says so; a drop noticed after
	// a step starts its own 60 s.
	for i := 0; e.metric("wharf_resource_proxy_requests_total", map[string]string{"target": targetName, "reason": "stale_peers"}) < 1; i++ {
		if i > 100 {
			t.Fatal("peer list never went stale")
		}
		e.clock.Step(rp.StaleAfter)
		if code, hdr, _, _ := e.rawList(t); code != 503 || hdr.Get("Retry-After") != "1" {
			t.Fatalf("stale: %d %q", code, hdr.Get("Retry-After"))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Recovery: both replicas back; the peer watch republishes through the
	// half-open trial, and requests bring the second peer back. While the
	// replicas were down the peer watch kept spending trials and
	// re-quarantining them for QuarantineDuration of the fake clock, so
	// time must pass here as it would in production: a quarantine still in
	// force is stepped past (never more than once per attempt).
	if err := e.kube.StartReplica(0); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.StartReplica(1); err != nil {
		t.Fatal(err)
	}
	passQuarantine := func() {
		if e.peers("quarantined") > 0 {
			e.clock.Step(rp.QuarantineDuration)
		}
	}
	eventually(t, "requests succeed again", func() error {
		passQuarantine()
		_, err := a.List(ctx, metav1.ListOptions{})
		return err
	})
	eventually(t, "both peers healthy", func() error {
		passQuarantine()
		if _, err := a.List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		if h := e.peers("healthy"); h != 2 {
			return fmt.Errorf("healthy = %v, quarantined %v, half_open %v", h, e.peers("quarantined"), e.peers("half_open"))
		}
		return nil
	})
	if q := e.peers("quarantined") + e.peers("half_open"); q != 0 {
		t.Errorf("after recovery %v peers are not healthy", q)
	}
}
