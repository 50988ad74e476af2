package fairness

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/apis/scheme"
)

// providerFilter is the provider routes' Filter over limits, with queues
// of queueLen (0: over the share is refused), on clock c, sharing api's
// tarpit.
func providerFilter(t *testing.T, limits Limits, queueLen int, c *clocktesting.FakeClock, api *Controller) Filter {
	t.Helper()
	pc, err := NewController(ControllerConfig{Keyer: testKeyer(), Limits: limits, QueueLength: queueLen, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: c})
	if err != nil {
		t.Fatal(err)
	}
	pc.ShareRefusals(api)
	return Filter{Flow: pc}
}

// sendProvider serves a provider-route request by u through h in the
// background, received at arrived.
func sendProvider(h http.Handler, method string, u user.Info, upgrade bool, arrived time.Time) sent {
	r := httptest.NewRequest(method, "/services/providers/example/x", nil)
	if upgrade {
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
	}
	ctx := apirequest.WithReceivedTimestamp(apirequest.WithUser(r.Context(), u), arrived)
	s := sent{w: httptest.NewRecorder(), answered: make(chan int, 1)}
	go func() { h.ServeHTTP(s.w, r.WithContext(ctx)); s.answered <- s.w.Code }()
	return s
}

// TestWithProviderLimit: on the provider routes the method decides the
// budget, and every request counts, streams included.
func TestWithProviderLimit(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	for _, tt := range []struct {
		name    string
		held    []string // methods held in flight by bob first
		method  string
		u       user.Info
		wantOK  bool
		upgrade bool
	}{
		{"mutating share used up", []string{http.MethodPost}, http.MethodPut, bob, false, false},
		{"read-only is separate", []string{http.MethodPost}, http.MethodGet, bob, true, false},
		{"HEAD and OPTIONS are read-only", []string{http.MethodHead}, http.MethodOptions, bob, false, false},
		{"an upgrade counts too", []string{http.MethodGet}, http.MethodGet, bob, false, true},
		{"another person", []string{http.MethodPost}, http.MethodPost, &user.DefaultInfo{Name: "alice"}, true, false},
		{"a hub admin", []string{http.MethodPost}, http.MethodPost, &user.DefaultInfo{Name: "hubadmin"}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
			h := held{entered: make(chan struct{}), release: make(chan struct{})}
			f := providerFilter(t, Limits{ReadOnly: 10, Mutating: 10, TenantReadOnly: 1, TenantMutating: 1}, 0, fake, nil)
			limited := f.WithProviderLimit(h, scheme.NewCodecs(scheme.New()))
			var running []sent
			for _, m := range tt.held {
				running = append(running, sendProvider(limited, m, bob, false, fake.Now()))
				<-h.entered
			}
			s := sendProvider(limited, tt.method, tt.u, tt.upgrade, fake.Now())
			select {
			case <-h.entered:
				if !tt.wantOK {
					t.Fatal("let in over the share")
				}
				running = append(running, s)
			case <-s.answered:
				if !tt.wantOK {
					checkTooMany(t, s.w)
					break
				}
				t.Fatalf("refused: %d %s", s.w.Code, s.w.Body)
			}
			close(h.release)
			answeredWith(t, "running", http.StatusCreated, running...)
		})
	}
}

// TestProviderRefusalsShareTheTarpit (outside review B-E): a provider
// route's refusal is held as the API's, until RefusalHold after its
// arrival, in the API's tarpit: a tenant's refusals on both paths count
// against one bound, past which the 429 is immediate. On a fake clock.
func TestProviderRefusalsShareTheTarpit(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	limits := Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 1, TenantMutating: 1}
	api, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: limits, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: fake,
		RefusalHold: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := gate{entered: make(chan string), release: map[string]chan struct{}{"bob": make(chan struct{})}}
	apiChain := chain(t, api, g)
	provider := providerFilter(t, limits, 0, fake, api).WithProviderLimit(g, scheme.NewCodecs(scheme.New()))
	bob := &user.DefaultInfo{Name: "bob"}

	// bob's one mutating seat on each path.
	running := []sent{sendProvider(provider, http.MethodPost, bob, false, fake.Now())}
	<-g.entered
	running = append(running, sendAt(apiChain, "bob", "create", fake.Now(), nil))
	<-g.entered
	// His bound of held refusals is 2 (tarpit.go): one provider refusal
	// and one of the API take it.
	held := []sent{sendProvider(provider, http.MethodPost, bob, false, fake.Now())}
	for api.tarpit.holding() != 1 {
		time.Sleep(time.Millisecond)
	}
	held = append(held, sendAt(apiChain, "bob", "create", fake.Now(), nil))
	for api.tarpit.holding() != 2 {
		time.Sleep(time.Millisecond)
	}
	refusedWith429(t, "a provider refusal past the shared bound", sendProvider(provider, http.MethodPost, bob, false, fake.Now()))
	refusedWith429(t, "a provider request that arrived a second ago", sendProvider(provider, http.MethodPut, bob, false, fake.Now().Add(-time.Second)))
	unanswered(t, "held refusals", held...)
	fake.Step(time.Second - time.Millisecond)
	unanswered(t, "held refusals a millisecond before their second", held...)
	fake.Step(time.Millisecond)
	for _, s := range held {
		refusedWith429(t, "held refusal after its second", s)
	}
	if n := api.tarpit.holding(); n != 0 {
		t.Fatalf("%d refusals still held", n)
	}
	close(g.release["bob"])
	answeredWith(t, "bob's running requests", http.StatusCreated, running...)
}

// TestProviderRequestsQueue: over its tenant's share, a provider-route
// request waits in its tenant's queue and is served once a seat frees,
// as the API's; past the queue wait (on the fake clock) it is refused.
func TestProviderRequestsQueue(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	f := providerFilter(t, Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 1, TenantMutating: 1}, 5, fake, nil)
	g := gate{entered: make(chan string), release: map[string]chan struct{}{"bob": make(chan struct{})}}
	provider := f.WithProviderLimit(g, scheme.NewCodecs(scheme.New()))
	bob := &user.DefaultInfo{Name: "bob"}
	first := sendProvider(provider, http.MethodPost, bob, false, fake.Now())
	<-g.entered
	waiting := func(want int) {
		for {
			if n, _ := f.Flow.Waiting(); n == want {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	// One after the other, so that the queue's order is known.
	queued := sendProvider(provider, http.MethodPost, bob, false, fake.Now())
	waiting(1)
	late := sendProvider(provider, http.MethodPost, bob, false, fake.Now())
	waiting(2)
	unanswered(t, "queued", queued, late)
	g.release["bob"] <- struct{}{}
	answeredWith(t, "first", http.StatusCreated, first)
	<-g.entered // the first queued one runs
	// The other waits until its queue wait ends.
	fake.Step(time.Hour)
	refusedWith429(t, "queued past the wait", late)
	close(g.release["bob"])
	answeredWith(t, "queued, then served", http.StatusCreated, queued)
}

// TestProviderDenialsArePaced: a provider route's 403s are paced with
// the API's buckets (denials.go): a tenant's burst is shared by both
// paths, and a 403 over it waits for its token, on the fake clock.
func TestProviderDenialsArePaced(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	limits := Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 2, TenantMutating: 2}
	api, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: limits, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: fake,
		DenialRate: 1, DenialBurst: 1, DenialHold: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	forbid := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) })
	provider := providerFilter(t, limits, 0, fake, api).WithProviderLimit(forbid, scheme.NewCodecs(scheme.New()))
	bob := &user.DefaultInfo{Name: "bob"}
	answeredWith(t, "bob's first 403 (his burst)", http.StatusForbidden, sendProvider(provider, http.MethodGet, bob, false, fake.Now()))
	paced := sendProvider(provider, http.MethodGet, bob, false, fake.Now())
	for api.denials.held.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	unanswered(t, "bob's second 403, over his burst", paced)
	fake.Step(time.Second)
	answeredWith(t, "bob's second 403 once his token came", http.StatusForbidden, paced)
}
