package fairness

import (
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	clocktesting "k8s.io/utils/clock/testing"
)

// A tenant's bytes (response and announced body) are charged once its
// request is done; while it is in debt its next requests wait, on the
// injected clock, or are refused at once when the debt outlasts their
// queue wait. Another tenant and a hub admin never wait for her debt.
func TestControllerTrafficBudget(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 10, TenantMutating: 10},
		QueueLength: 5, HubQueues: 8, QueueWait: 5 * time.Second, Clock: eventclock.Real{}, WaitClock: fake,
		// 1,000 bytes a second after a burst of 1,000: a 3,000-byte
		// answer leaves its tenant 2 s in debt.
		TrafficRate: 1000, TrafficBurst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 3000)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("big") != "" {
			_, _ = w.Write([]byte(big))
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	limited := chain(t, c, h)
	send := func(name string, header http.Header) sent { return sendAt(limited, name, "get", fake.Now(), header) }
	waiting := func(tenant string, n int) {
		for {
			got := 0
			c.traffic.buckets.Peek(tenant, func(b *bytesBucket) { got = b.waiting })
			if got >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	bigAnswer := http.Header{"Big": {"1"}}

	answeredWith(t, "bob's first big answer, within the burst", http.StatusOK, send("bob", bigAnswer))
	// Now 2,000 bytes in debt: the next request waits 2 s for it.
	next := send("bob", nil)
	bobTenant, _ := testKeyer().Tenant(t.Context(), &user.DefaultInfo{Name: "bob"})
	waiting(bobTenant, 1)
	answeredWith(t, "alice, another tenant", http.StatusOK, send("alice", bigAnswer))
	answeredWith(t, "a hub admin", http.StatusOK, send("hubadmin", bigAnswer))
	unanswered(t, "bob's request while he is in debt", next)
	fake.Step(1999 * time.Millisecond)
	unanswered(t, "a millisecond before the debt is paid", next)
	fake.Step(time.Millisecond)
	answeredWith(t, "once the debt is paid", http.StatusOK, next)

	// A request whose wait for the debt would pass the end of its queue
	// wait is refused at once with the hub's 429 (this Controller has
	// no tarpit).
	answeredWith(t, "alice's second big answer", http.StatusOK, send("alice", bigAnswer))
	late := sendAt(limited, "alice", "get", fake.Now().Add(-4500*time.Millisecond), nil)
	refusedWith429(t, "alice's request that arrived 4.5 s ago, 2 s in debt", late)
}

// A gzipped answer is charged what it inflates to (third review, C-H:
// 'z' × 900 KB compresses a thousandfold), as the hub wrote it.
func TestTrafficChargesUncompressed(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 10, TenantMutating: 10},
		QueueLength: 5, HubQueues: 8, QueueWait: 5 * time.Second, Clock: eventclock.Real{}, WaitClock: fake,
		TrafficRate: 1, TrafficBurst: 10 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := strings.Repeat("z", 1<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		zw := gzip.NewWriter(w)
		_, _ = zw.Write([]byte(plain))
		_ = zw.Close()
	})
	answeredWith(t, "bob's gzipped answer", http.StatusOK, sendAt(chain(t, c, h), "bob", "get", fake.Now(), nil))
	tenant, _ := testKeyer().Tenant(t.Context(), &user.DefaultInfo{Name: "bob"})
	var tokens float64
	c.traffic.buckets.Peek(tenant, func(b *bytesBucket) { tokens = b.tokens })
	if want := float64(9 << 20); tokens > want+1000 {
		t.Fatalf("bob has %.0f bytes left after a 1 MiB answer gzipped, want about %.0f", tokens, want)
	}
}

// Requests are admitted while the bucket covers what is in flight (third
// review, C-H: 40 lists admitted before the first was charged); a watch
// event is refused while its tenant is in debt (C-D), on the injected
// clock.
func TestTrafficAdmitsWhatIsInFlight(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	tr := newTraffic(fake, 1000, 1000, 5)
	soon := func() time.Time { return fake.Now().Add(100 * time.Millisecond) }
	m1, ok1 := tr.admit(t.Context(), soon(), "a", 600)
	m2, ok2 := tr.admit(t.Context(), soon(), "a", 600)
	if !ok1 || !ok2 {
		t.Fatalf("two 600-byte requests within a 1,000-byte bucket: admitted %v %v", ok1, ok2)
	}
	// 1,200 in flight against 1,000: the third waits 200 ms, past its
	// deadline, so it is refused at once; another tenant is not.
	if _, ok := tr.admit(t.Context(), soon(), "a", 600); ok {
		t.Fatal("a third request was admitted with 1,200 bytes in flight against 1,000")
	}
	if _, ok := tr.admit(t.Context(), soon(), "b", 600); !ok {
		t.Fatal("another tenant was refused")
	}
	m1.take(600, false)
	m1.close()
	m2.take(700, false) // 100 more than expected: 300 bytes in debt
	m2.close()
	if _, ok := tr.admit(t.Context(), soon(), "a", 0); ok {
		t.Fatal("admitted while 300 bytes in debt, 100 ms before its deadline")
	}
	done := make(chan *meter, 1)
	go func() {
		m, _ := tr.admit(t.Context(), time.Time{}, "a", 0)
		done <- m
	}()
	for {
		waiting := 0
		tr.buckets.Peek("a", func(b *bytesBucket) { waiting = b.waiting })
		if waiting == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("admitted before the debt was paid")
	default:
	}
	fake.Step(300 * time.Millisecond)
	w := <-done
	if !w.take(100, true) {
		t.Fatal("a watch event refused once the debt was paid")
	}
	w.close()
	if w.take(1, true) {
		t.Fatal("a watch event sent while the tenant is in debt")
	}

	// A request waiting for what is in flight looks again as soon as
	// that ends, not when its computed wait is over.
	fake.Step(10 * time.Second)
	first, _ := tr.admit(t.Context(), time.Time{}, "c", 0)
	first.take(1, false)
	// 999 bytes left, 1,000 expected in flight.
	big, _ := tr.admit(t.Context(), time.Time{}, "c", 1000)
	go func() {
		m, _ := tr.admit(t.Context(), time.Time{}, "c", 0)
		done <- m
	}()
	for {
		waiting := 0
		tr.buckets.Peek("c", func(b *bytesBucket) { waiting = b.waiting })
		if waiting == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	big.close()
	if m := <-done; m == nil {
		t.Fatal("not admitted once the request in flight ended")
	}
}
