package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
)

// testKeyer: bob's service account is confined to a child of his home;
// hubadmin is a hub administrator.
func testKeyer() Keyer {
	return Keyer{
		IsAdmin: func(u user.Info) bool { return u.GetName() == "hubadmin" },
		PathOf: func(_ context.Context, id cluster.ID) (cluster.Path, error) {
			return home.PathOf("bob").Join("child"), nil
		},
	}
}

// chain is the hub's arrangement: WithState outside upstream's priority
// and fairness filter, which calls the Controller (hub/server/config.go).
func chain(t *testing.T, c *Controller, inner http.Handler) http.Handler {
	t.Helper()
	s := scheme.NewCodecs(scheme.New())
	longRunning := func(r *http.Request, _ *apirequest.RequestInfo) bool { return r.Header.Get("long") != "" }
	return WithState(genericfilters.WithPriorityAndFairness(inner, longRunning, c, nil, time.Minute), s)
}

type testReq struct {
	u        user.Info
	verb     string
	path     string // a non-resource request to path; "": a configmap
	query    string
	longRun  bool
	settle   bool // once held, wait until it holds no seat (a watch past its initial list)
	wantHeld bool // held in flight; otherwise answered at once with want
	want     int
	length   int64 // the body's announced length (Content-Length), -1 unknown
}

func (rq testReq) request() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps?"+rq.query, nil)
	r.ContentLength = rq.length
	if rq.longRun {
		r.Header.Set("long", "1")
	}
	ctx := apirequest.WithUser(r.Context(), rq.u)
	info := &apirequest.RequestInfo{IsResourceRequest: true, Verb: rq.verb, APIVersion: "v1", Resource: "configmaps", Namespace: "default"}
	if rq.verb == "get" {
		info.Name = "cm"
	}
	if rq.path != "" {
		info = &apirequest.RequestInfo{Verb: rq.verb, Path: rq.path}
	}
	ctx = apirequest.WithRequestInfo(ctx, info)
	ctx = cluster.WithTarget(ctx, cluster.Target{Raw: "root:users:bob", Explicit: true})
	return r.WithContext(ctx)
}

// heldWatch is held like held, and signals upstream's filter that its
// initial list is sent, as the watch cache does.
type heldWatch struct{ held }

func (h heldWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	utilflowcontrol.WatchInitialized(r.Context())
	h.held.ServeHTTP(w, r)
}

// runTable sends reqs in order; each is held by the handler or answered
// at once, as it says. Held requests are released at the end.
func runTable(t *testing.T, c *Controller, reqs []testReq) {
	h := held{entered: make(chan struct{}), release: make(chan struct{})}
	limited := chain(t, c, heldWatch{h})
	var done []chan int
	for i, rq := range reqs {
		w := httptest.NewRecorder()
		answered := make(chan int, 1)
		r := rq.request()
		go func() { limited.ServeHTTP(w, r); answered <- w.Code }()
		select {
		case <-h.entered:
			if !rq.wantHeld {
				t.Fatalf("request %d (%s %s) was let in", i, rq.u.GetName(), rq.verb)
			}
			done = append(done, answered)
			if rq.settle {
				waitSettled(c)
			}
		case code := <-answered:
			if rq.wantHeld || code != rq.want {
				t.Fatalf("request %d (%s %s): answered %d, want held %v / %d: %s", i, rq.u.GetName(), rq.verb, code, rq.wantHeld, rq.want, w.Body)
			}
			checkTooMany(t, w)
		}
	}
	close(h.release)
	for _, d := range done {
		if code := <-d; code != http.StatusCreated {
			t.Fatalf("held request answered %d", code)
		}
	}
}

func newTestController(t *testing.T, queueLen int, w *Watches) *Controller {
	t.Helper()
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 2, TenantMutating: 2},
		QueueLength: queueLen, HubQueues: 8, Estimator: NewEstimator(100), Watches: w, Clock: eventclock.Real{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestController is TestWithLimit's table (the in-flight limit it tested
// moved here, before authorization), with no queue: what is over a share
// is refused at once.
func TestController(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	bobSA := &user.DefaultInfo{Name: "system:serviceaccount:default:a", Extra: map[string][]string{cluster.ConfinedExtra: {"bobhome00000000a"}}}
	alice := &user.DefaultInfo{Name: "alice"}
	admin := &user.DefaultInfo{Name: "hubadmin"}
	anon := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	for _, tt := range []struct {
		name string
		reqs []testReq
	}{
		{"bob's share, then others are served", []testReq{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", want: http.StatusTooManyRequests},
			{u: bobSA, verb: "create", want: http.StatusTooManyRequests},
			{u: alice, verb: "create", wantHeld: true},
			{u: admin, verb: "create", wantHeld: true},
		}},
		{"service accounts share their person's share", []testReq{
			{u: bobSA, verb: "update", wantHeld: true},
			{u: bobSA, verb: "patch", wantHeld: true},
			{u: bob, verb: "delete", want: http.StatusTooManyRequests},
		}},
		{"read-only is a budget of its own", []testReq{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
		}},
		{"long-running requests other than watches are not counted", []testReq{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "connect", longRun: true, wantHeld: true},
		}},
		{"a watch holds seats for its initial list only", []testReq{
			{u: bob, verb: "watch", query: "resourceVersion=5", longRun: true, settle: true, wantHeld: true},
			{u: bob, verb: "watch", query: "resourceVersion=5", longRun: true, settle: true, wantHeld: true},
			{u: bob, verb: "watch", query: "resourceVersion=5", longRun: true, settle: true, wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
			{u: bob, verb: "get", want: http.StatusTooManyRequests},
		}},
		{"a list of unknown size costs the whole share", []testReq{
			{u: bob, verb: "list", wantHeld: true},
			{u: bob, verb: "get", want: http.StatusTooManyRequests},
			{u: alice, verb: "get", wantHeld: true},
		}},
		{"health probes are exempt, as upstream's probes FlowSchema", []testReq{
			{u: anon, verb: "get", path: "/readyz", wantHeld: true},
			{u: anon, verb: "get", path: "/readyz", wantHeld: true},
			{u: anon, verb: "get", path: "/livez", wantHeld: true},
			{u: anon, verb: "get", path: "/healthz", wantHeld: true},
			{u: anon, verb: "get", path: "/readyz", wantHeld: true},
			{u: bob, verb: "get", path: "/livez", wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
			{u: bob, verb: "get", want: http.StatusTooManyRequests},
		}},
		{"sub-paths and other verbs of the health paths are counted", []testReq{
			{u: anon, verb: "get", path: "/readyz/etcd", wantHeld: true},
			{u: anon, verb: "get", path: "/livez/", wantHeld: true},
			{u: anon, verb: "get", path: "/readyz", wantHeld: true},
			{u: anon, verb: "get", path: "//readyz", want: http.StatusTooManyRequests},
			{u: anon, verb: "post", path: "/readyz", wantHeld: true},
			{u: anon, verb: "head", path: "/readyz", wantHeld: true},
			{u: anon, verb: "put", path: "/readyz", want: http.StatusTooManyRequests},
		}},
		{"hub-wide budget, admins still served", []testReq{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: alice, verb: "create", wantHeld: true},
			{u: alice, verb: "create", wantHeld: true},
			{u: &user.DefaultInfo{Name: "carol"}, verb: "create", want: http.StatusTooManyRequests},
			{u: admin, verb: "create", wantHeld: true},
			{u: &user.DefaultInfo{Name: "system:apiserver", Groups: []string{user.SystemPrivilegedGroup}}, verb: "create", wantHeld: true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runTable(t, newTestController(t, 0, nil), tt.reqs)
		})
	}
}

// TestControllerQueues: over its share a request waits in its tenant's
// queue and runs once a seat is free; past the queue it is refused.
func TestControllerQueues(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	c := newTestController(t, 1, nil)
	h := held{entered: make(chan struct{}), release: make(chan struct{})}
	limited := chain(t, c, h)
	serve := func(rq testReq) (*httptest.ResponseRecorder, chan int) {
		w := httptest.NewRecorder()
		answered := make(chan int, 1)
		r := rq.request()
		go func() { limited.ServeHTTP(w, r); answered <- w.Code }()
		return w, answered
	}
	var done []chan int
	for i := 0; i < 2; i++ {
		_, a := serve(testReq{u: bob, verb: "create"})
		<-h.entered
		done = append(done, a)
	}
	// The third waits; the fourth finds the queue full.
	_, queued := serve(testReq{u: bob, verb: "create"})
	tenant, _ := testKeyer().Tenant(context.Background(), bob)
	waitQueued(t, c, tenant, Mutating)
	w, refused := serve(testReq{u: bob, verb: "create"})
	if code := <-refused; code != http.StatusTooManyRequests {
		t.Fatalf("past the queue: %d", code)
	}
	checkTooMany(t, w)
	// A seat frees: the queued one runs.
	h.release <- struct{}{}
	<-h.entered
	done = append(done, queued)
	close(h.release)
	for _, d := range done {
		if code := <-d; code != http.StatusCreated {
			t.Fatalf("answered %d", code)
		}
	}
}

// waitQueued waits until tenant has a request waiting. Untimed: it polls
// the queue set's state, not the clock.
func waitQueued(t *testing.T, c *Controller, tenant string, k Kind) {
	t.Helper()
	for {
		c.mu.Lock()
		tq := c.tenants[tenantKind{tenant, k}]
		waiting := tq != nil && tq.qs.Dump(false).Waiting > 0
		c.mu.Unlock()
		if waiting {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestControllerWatches: a tenant's open watches are capped; closing one
// gives its place back; administrators are never refused.
func TestControllerWatches(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	alice := &user.DefaultInfo{Name: "alice"}
	admin := &user.DefaultInfo{Name: "hubadmin"}
	ws := NewWatches(2, 4)
	watch := testReq{verb: "watch", query: "resourceVersion=5", longRun: true}
	with := func(u user.Info, held bool) testReq {
		r := watch
		r.u, r.wantHeld, r.want, r.settle = u, held, http.StatusTooManyRequests, held
		return r
	}
	runTable(t, newTestController(t, 0, ws), []testReq{
		with(bob, true), with(bob, true), with(bob, false),
		with(alice, true), with(alice, true),
		// Hub-wide cap reached: alice's third is refused by either bound,
		// an administrator is not.
		with(alice, false), with(admin, true),
	})
	if total, _ := ws.Open(""); total != 0 {
		t.Fatalf("%d watches still counted after they ended", total)
	}
	runTable(t, newTestController(t, 0, ws), []testReq{with(bob, true), with(bob, true), with(bob, false)})
}

// waitSettled waits until no tenant holds or waits for a seat. Untimed:
// it polls the Controller's state, not the clock.
func waitSettled(c *Controller) {
	for {
		c.mu.Lock()
		n := 0
		for _, tq := range c.tenants {
			n += tq.refs // idle queue sets kept for reuse hold nothing
		}
		c.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
