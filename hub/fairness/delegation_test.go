package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/sdk"
)

// actKey carries what a test request's handler does (act).
type actKey struct{}

// act runs the func its request carries, else answers 201.
var act = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if f, ok := r.Context().Value(actKey{}).(http.HandlerFunc); ok {
		f(w, r)
		return
	}
	w.WriteHeader(http.StatusCreated)
})

// send serves rq through h with handler f (nil: 201) and delegation tok.
func send(h http.Handler, rq testReq, tok string, f http.HandlerFunc) *httptest.ResponseRecorder {
	r := rq.request()
	if tok != "" {
		r.Header.Set(HeaderDelegation, tok)
	}
	if f != nil {
		r = r.WithContext(context.WithValue(r.Context(), actKey{}, f))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestDelegatedCallBack (sixth outside review, W10): bob's list of
// unknown size holds his whole read share while it is relayed to a
// provider; the provider's call back, made as an identity confined to
// bob's tree (the resource proxy's wharf:workspace:<path>), ran into that
// share behind the very list it served and was refused (here at once:
// no queue; on the hub after the 5 s queue wait). With the relayed
// request's delegation it runs on the relayed request's seats; without
// it, or with one that is not its own, it is admitted as any request.
// No queue, so nothing here waits or depends on time.
func TestDelegatedCallBack(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	alice := &user.DefaultInfo{Name: "alice"}
	// Confined to a child of bob's home (testKeyer): bob's tenant.
	proxyAsBob := &user.DefaultInfo{Name: "wharf:workspace:root:users:bob:child", Extra: map[string][]string{cluster.ConfinedExtra: {"bobchild0000000a"}}}
	list := func(u user.Info) testReq { return testReq{u: u, verb: "list"} }
	if HeaderDelegation != sdk.HeaderDelegation {
		t.Fatalf("the hub reads %q, providers are told to send %q", HeaderDelegation, sdk.HeaderDelegation)
	}
	for _, tt := range []struct {
		name string
		// callBacks are made in order by bob's relayed list, each with
		// the delegation tok(its own) returns, and must answer want.
		callBacks []testReq
		tok       func(own string) string
		want      []int
		// nested: the first call back makes a second with the same
		// delegation while it runs, which must answer nestedWant.
		nested     bool
		nestedWant int
	}{
		{name: "its own delegation: served on the relayed list's seats",
			callBacks: []testReq{list(proxyAsBob), {u: proxyAsBob, verb: "get"}, {u: proxyAsBob, verb: "create"}},
			tok:       func(own string) string { return own }, want: []int{http.StatusCreated, http.StatusCreated, http.StatusCreated}},
		{name: "none: waits for bob's share behind the list (the old answer)",
			callBacks: []testReq{list(proxyAsBob)},
			tok:       func(string) string { return "" }, want: []int{http.StatusTooManyRequests}},
		{name: "an unknown one is none",
			callBacks: []testReq{list(proxyAsBob)},
			tok:       func(string) string { return "bm90LWEtZGVsZWdhdGlvbg" }, want: []int{http.StatusTooManyRequests}},
		{name: "any identity of bob's tenant: served",
			callBacks: []testReq{list(bob)},
			tok:       func(own string) string { return own }, want: []int{http.StatusCreated}},
		{name: "one at a time",
			callBacks: []testReq{list(proxyAsBob)},
			tok:       func(own string) string { return own }, want: []int{http.StatusCreated},
			nested: true, nestedWant: http.StatusTooManyRequests},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestController(t, 0, nil)
			h := chain(t, c, act)
			var got []int
			var nestedGot int
			var own string
			w := send(h, list(bob), "", func(w http.ResponseWriter, r *http.Request) {
				var done func()
				own, done = Relayed(r.Context())
				defer done()
				if own == "" {
					t.Error("a relayed list holding seats got no delegation")
				}
				for _, cb := range tt.callBacks {
					var f http.HandlerFunc
					if tt.nested {
						f = func(w http.ResponseWriter, _ *http.Request) {
							nestedGot = send(h, list(proxyAsBob), own, nil).Code
							w.WriteHeader(http.StatusCreated)
						}
					}
					got = append(got, send(h, cb, tt.tok(own), f).Code)
				}
				w.WriteHeader(http.StatusOK)
			})
			if w.Code != http.StatusOK {
				t.Fatalf("bob's relayed list: %d %s", w.Code, w.Body)
			}
			for i := range tt.want {
				if i >= len(got) || got[i] != tt.want[i] {
					t.Fatalf("call backs answered %v, want %v", got, tt.want)
				}
			}
			if tt.nested && nestedGot != tt.nestedWant {
				t.Fatalf("a second call back at once answered %d, want %d", nestedGot, tt.nestedWant)
			}
			// Its seats given back, the delegation is worth nothing: bob's
			// share is held by another list now.
			send(h, list(bob), "", func(w http.ResponseWriter, r *http.Request) {
				if code := send(h, list(proxyAsBob), own, nil).Code; code != http.StatusTooManyRequests {
					t.Errorf("a call back with an ended delegation: %d, want 429", code)
				}
				w.WriteHeader(http.StatusOK)
			})
		})
	}

	t.Run("another tenant's call back gets nothing from bob's delegation", func(t *testing.T) {
		c := newTestController(t, 0, nil)
		h := chain(t, c, act)
		// alice's own list holds her share while bob's relayed list
		// lends his seats.
		send(h, list(alice), "", func(w http.ResponseWriter, _ *http.Request) {
			send(h, list(bob), "", func(w http.ResponseWriter, r *http.Request) {
				tok, done := Relayed(r.Context())
				defer done()
				if code := send(h, list(alice), tok, nil).Code; code != http.StatusTooManyRequests {
					t.Errorf("alice with bob's delegation: %d, want 429 (her share is full)", code)
				}
				w.WriteHeader(http.StatusOK)
			})
			w.WriteHeader(http.StatusOK)
		})
	})

	t.Run("no delegation without seats: a watch, an administrator, outside the chain", func(t *testing.T) {
		c := newTestController(t, 0, nil)
		h := chain(t, c, act)
		for _, rq := range []testReq{
			{u: bob, verb: "watch", query: "resourceVersion=5", longRun: true},
			{u: &user.DefaultInfo{Name: "hubadmin"}, verb: "list"},
		} {
			send(h, rq, "", func(w http.ResponseWriter, r *http.Request) {
				tok, done := Relayed(r.Context())
				done()
				if tok != "" {
					t.Errorf("%s %s got a delegation", rq.u.GetName(), rq.verb)
				}
				w.WriteHeader(http.StatusOK)
			})
		}
		if tok, done := Relayed(context.Background()); tok != "" {
			t.Error("a delegation without a request")
		} else {
			done()
		}
	})
}

// TestDelegatedCallBackIsCharged: a call back takes no seats, but what it
// moves is charged to its tenant's traffic budget all the same.
func TestDelegatedCallBackIsCharged(t *testing.T) {
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 2, TenantMutating: 2},
		HubQueues: 8, Estimator: NewEstimator(100), Clock: eventclock.Real{},
		TrafficRate: 1, TrafficBurst: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := chain(t, c, act)
	bob := &user.DefaultInfo{Name: "bob"}
	proxyAsBob := &user.DefaultInfo{Name: "wharf:workspace:root:users:bob:child", Extra: map[string][]string{cluster.ConfinedExtra: {"bobchild0000000a"}}}
	tenant, _ := testKeyer().Tenant(context.Background(), bob)
	const size = 100 << 10
	var left float64
	send(h, testReq{u: bob, verb: "get"}, "", func(w http.ResponseWriter, r *http.Request) {
		tok, done := Relayed(r.Context())
		defer done()
		code := send(h, testReq{u: proxyAsBob, verb: "list"}, tok, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(make([]byte, size))
		}).Code
		if code != http.StatusOK {
			t.Errorf("call back: %d", code)
		}
		c.traffic.do(tenant, func(b *bytesBucket, _ time.Time) { left = b.tokens })
		w.WriteHeader(http.StatusOK)
	})
	// Less what the bucket refilled meanwhile, at a byte a second.
	if spent := float64(1<<20) - left; spent < size-1024 {
		t.Fatalf("the call back's %d bytes charged %v", size, spent)
	}
}
