package fairness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
)

// An upgraded connection's bytes put its tenant in debt like any
// request's, and the read or write that did waits for the debt on the
// injected clock, or until the connection is closed or its request ends.
func TestTrafficHold(t *testing.T) {
	for _, tt := range []struct {
		name    string
		n       int64
		waits   bool
		release func(fake *clocktesting.FakeClock, done chan struct{}, cancel context.CancelFunc)
		tokens  float64 // left once released, before any refill
	}{
		{"within the burst", 500, false, nil, 500},
		{"into debt: waits for it", 3000, true, func(fake *clocktesting.FakeClock, _ chan struct{}, _ context.CancelFunc) { fake.Step(2 * time.Second) }, 0},
		{"into debt: the connection closes", 3000, true, func(_ *clocktesting.FakeClock, done chan struct{}, _ context.CancelFunc) { close(done) }, -2000},
		{"into debt: the request ends", 3000, true, func(_ *clocktesting.FakeClock, _ chan struct{}, cancel context.CancelFunc) { cancel() }, -2000},
		{"debt past its floor is forgiven", 10000, true, func(fake *clocktesting.FakeClock, _ chan struct{}, _ context.CancelFunc) { fake.Step(4 * time.Second) }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := clocktesting.NewFakeClock(time.Now())
			tr := newTraffic(fake, 1000, 1000, 10)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan struct{})
			returned := make(chan struct{})
			go func() { tr.hold(ctx, done, "tree:a", tt.n, true); close(returned) }()
			if tt.waits {
				for !fake.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
				select {
				case <-returned:
					t.Fatal("returned in debt")
				default:
				}
				var tokens float64
				tr.buckets.Peek("tree:a", func(b *bytesBucket) { tokens = b.tokens })
				if tokens >= 0 {
					t.Fatalf("waiting with %v tokens", tokens)
				}
				tt.release(fake, done, cancel)
			}
			<-returned
			var tokens float64
			tr.do("tree:a", func(b *bytesBucket, _ time.Time) { tokens = b.tokens })
			if tokens != tt.tokens && !(tt.n > 4000 && tokens == -4000) {
				t.Errorf("tokens %v, want %v", tokens, tt.tokens)
			}
		})
	}
}

// Both routes an upgrade can take through the hub, the provider routes
// and the API chain (long-running, so upstream's filter never asks the
// Controller), charge its bytes both ways to the caller's tenant and pace
// them; a hub admin's upgrade is charged nothing and never waits.
func TestUpgradedConnectionsCharged(t *testing.T) {
	s := scheme.NewCodecs(scheme.New())
	for _, tt := range []struct {
		route   string
		who     string
		charged bool
		// early: the client sends its bytes right behind its request,
		// before the 101: the server has them buffered at the hijack.
		early bool
	}{
		{"provider", "bob", true, false},
		{"provider", "bob", true, true},
		{"provider", "hubadmin", false, false},
		{"api", "bob", true, false},
		{"api", "bob", true, true},
		{"api", "hubadmin", false, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/early=%v", tt.route, tt.who, tt.early), func(t *testing.T) {
			fake := clocktesting.NewFakeClock(time.Now())
			// 1,000 bytes a second after a burst of 1,000: echoing
			// 3,000 bytes puts bob 5,000 or more in debt.
			api, err := NewController(ControllerConfig{
				Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 10, TenantMutating: 10},
				QueueLength: 5, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: fake,
				TrafficRate: 1000, TrafficBurst: 1000,
			})
			if err != nil {
				t.Fatal(err)
			}
			var h http.Handler
			switch tt.route {
			case "provider":
				f := providerFilter(t, Limits{ReadOnly: 10, Mutating: 10, TenantReadOnly: 5, TenantMutating: 5}, 0, fake, api)
				h = f.WithProviderLimit(http.HandlerFunc(echoUpgrade), s)
			default:
				h = chain(t, api, api.WithUpgrades(http.HandlerFunc(echoUpgrade)))
			}
			srv := httptest.NewServer(withCaller(h, tt.who))
			defer srv.Close()

			in0, _ := testutil.GetCounterMetricValue(upgradedBytes.WithLabelValues("in"))
			out0, _ := testutil.GetCounterMetricValue(upgradedBytes.WithLabelValues("out"))
			payload := strings.Repeat("x", 3000)
			early := ""
			if tt.early {
				early = payload
			}
			conn, br := dialUpgrade(t, srv.Listener.Addr().String(), early)
			defer conn.Close()
			echoed := make(chan error, 1)
			go func() {
				got := make([]byte, len(payload))
				_, err := io.ReadFull(br, got)
				if err == nil && string(got) != payload {
					err = fmt.Errorf("echoed %q…, want %q…", got[:10], payload[:10])
				}
				echoed <- err
			}()
			if !tt.early {
				if _, err := io.WriteString(conn, payload); err != nil {
					t.Fatal(err)
				}
			}
			if tt.charged {
				// The echo is paced: it completes only as the clock
				// pays bob's debt.
				steps := 0
				for done := false; !done; {
					select {
					case err := <-echoed:
						if err != nil {
							t.Fatal(err)
						}
						done = true
						if steps == 0 {
							t.Error("echoed without waiting for the debt")
						}
					default:
						if fake.HasWaiters() {
							fake.Step(time.Second)
							steps++
						}
						time.Sleep(time.Millisecond)
					}
				}
			} else if err := <-echoed; err != nil {
				t.Fatal(err)
			}
			conn.Close()
			in, _ := testutil.GetCounterMetricValue(upgradedBytes.WithLabelValues("in"))
			out, _ := testutil.GetCounterMetricValue(upgradedBytes.WithLabelValues("out"))
			// What the handler wrote (the 101 head, the echo) is charged
			// once its write returned, which may come after the client
			// read it: the client's count is a floor.
			if tt.charged && (in-in0 < float64(len(payload)) || out-out0 < float64(len(payload))) {
				t.Errorf("charged %v in and %v out, want at least %d each way", in-in0, out-out0, len(payload))
			}
			if !tt.charged && (in != in0 || out != out0) {
				t.Errorf("a hub admin's upgrade charged %v in and %v out", in-in0, out-out0)
			}
		})
	}
}

// withCaller is authentication and request info for the tests: the
// caller is who, every request a long-running (the API chain's
// upgrades are).
func withCaller(h http.Handler, who string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("long", "1")
		ctx := apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: who})
		ctx = apirequest.WithRequestInfo(ctx, &apirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1",
			Resource: "pods", Subresource: "exec", Namespace: "default", Name: "p"})
		ctx = cluster.WithTarget(ctx, cluster.Target{Raw: "root:users:bob", Explicit: true})
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// echoUpgrade switches protocols and echoes what it reads, as a
// websocket echo or an exec stream would carry it.
func echoUpgrade(w http.ResponseWriter, _ *http.Request) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	if brw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, brw)
}

// dialUpgrade asks addr for an upgrade, with early right behind the
// request, and returns the connection once switched, with its reader.
func dialUpgrade(t *testing.T, addr, early string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "POST /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"+early); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	return conn, br
}
