package fairqueue

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/clusters"
)

// tenantOfKey: the tenant of "a1" is "a".
func tenantOfKey(s string) string { return s[:1] }

// drain takes every waiting item, marking each done at once.
func drain(q workqueue.TypedRateLimitingInterface[string]) []string {
	var got []string
	for q.Len() > 0 {
		item, _ := q.Get()
		got = append(got, item)
		q.Done(item)
	}
	return got
}

func TestTurns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tenantOf func(string) string
		max      int
		add      []string
		want     []string
	}{
		{name: "one tenant is FIFO", tenantOf: tenantOfKey,
			add: []string{"a3", "a1", "a2"}, want: []string{"a3", "a1", "a2"}},
		{name: "no TenantOf is FIFO", tenantOf: nil,
			add: []string{"a1", "a2", "b1", "a3"}, want: []string{"a1", "a2", "b1", "a3"}},
		{name: "a backlog waits its turn", tenantOf: tenantOfKey,
			add:  []string{"a1", "a2", "a3", "a4", "a5", "b1", "c1", "c2"},
			want: []string{"a1", "b1", "c1", "a2", "c2", "a3", "a4", "a5"}},
		{name: "a tenant joins the ring's end", tenantOf: tenantOfKey,
			add:  []string{"a1", "a2", "b1", "b2", "c1"},
			want: []string{"a1", "b1", "c1", "a2", "b2"}},
		{name: "an item queued twice keeps its first place", tenantOf: tenantOfKey,
			add:  []string{"a1", "a2", "b1", "a1", "b1", "a1"},
			want: []string{"a1", "b1", "a2"}},
		{name: "over the bound is dropped", tenantOf: tenantOfKey, max: 2,
			add:  []string{"a1", "a2", "a3", "a4", "b1", "a1"},
			want: []string{"a1", "b1", "a2"}},
		{name: "negative max is unbounded", tenantOf: tenantOfKey, max: -1,
			add:  []string{"a1", "a2", "a3", "b1"},
			want: []string{"a1", "b1", "a2", "a3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Config[string]{TenantOf: tc.tenantOf, MaxPerTenant: tc.max})
			defer q.ShutDown()
			for _, item := range tc.add {
				q.Add(item)
			}
			if got := drain(q); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBacklogDoesNotDelayOthers is B-D at unit scale: tenant a has 6,720
// items waiting when b adds one; b's is handed out second.
func TestBacklogDoesNotDelayOthers(t *testing.T) {
	q := New(Config[string]{TenantOf: tenantOfKey, MaxPerTenant: -1})
	defer q.ShutDown()
	for i := range 6720 {
		q.Add("a" + string(rune('0'+i%10)) + strings.Repeat("x", i/10))
	}
	q.Add("b1")
	for n := 1; ; n++ {
		item, _ := q.Get()
		q.Done(item)
		if item == "b1" {
			if n != 2 {
				t.Fatalf("b1 handed out %dth", n)
			}
			break
		}
	}
	if q.Len() != 6719 {
		t.Errorf("%d items left, want 6719 of a's", q.Len())
	}
}

// TestAddWhileProcessing: an item added while a worker holds it is queued
// once more, after Done (client-go's contract, kept).
func TestAddWhileProcessing(t *testing.T) {
	q := New(Config[string]{TenantOf: tenantOfKey})
	defer q.ShutDown()
	q.Add("a1")
	item, _ := q.Get()
	q.Add("a1")
	q.Add("b1")
	if got := q.Len(); got != 1 {
		t.Fatalf("len %d while a1 is processed, want 1 (b1)", got)
	}
	q.Done(item)
	if got := drain(q); !reflect.DeepEqual(got, []string{"b1", "a1"}) {
		t.Errorf("order %v, want [b1 a1]", got)
	}
}

// TestResyncAfterOverflow: items dropped over the bound come back through
// Resync once the tenant's waiting items are handed out, so nothing is
// lost; a tenant that never overflowed is never resynced.
func TestResyncAfterOverflow(t *testing.T) {
	// pending is what the controller still has to do, per tenant: the
	// informer cache's view, which Resync adds again.
	pending := map[string][]string{"a": {"a1", "a2", "a3", "a4", "a5"}, "b": {"b1"}}
	var resyncs []string
	var q workqueue.TypedRateLimitingInterface[string]
	q = New(Config[string]{TenantOf: tenantOfKey, MaxPerTenant: 2, Resync: func(tenant string) {
		resyncs = append(resyncs, tenant)
		for _, item := range pending[tenant] {
			q.Add(item)
		}
	}})
	defer q.ShutDown()
	for _, items := range [][]string{pending["a"], pending["b"]} {
		for _, item := range items {
			q.Add(item)
		}
	}
	done := map[string]bool{}
	var got []string
	for q.Len() > 0 {
		item, _ := q.Get()
		got = append(got, item)
		done[item] = true
		tenant := tenantOfKey(item)
		left := pending[tenant][:0]
		for _, p := range pending[tenant] {
			if p != item {
				left = append(left, p)
			}
		}
		pending[tenant] = left
		q.Done(item)
	}
	for _, item := range []string{"a1", "a2", "a3", "a4", "a5", "b1"} {
		if !done[item] {
			t.Errorf("%s was lost (handed out %v)", item, got)
		}
	}
	if want := []string{"a1", "b1", "a2", "a3", "a4", "a5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if want := []string{"a", "a"}; !reflect.DeepEqual(resyncs, want) {
		// a1..a5 need two refills of two: a3 a4 after a2, a5 after a4.
		t.Errorf("resyncs %v, want %v", resyncs, want)
	}
}

// TestRateLimitedRequeue: a failed item comes back after its backoff, on
// the injected clock, and then waits its tenant's turn like any other.
func TestRateLimitedRequeue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	q := New(Config[string]{TenantOf: tenantOfKey, Clock: clk,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)})
	defer q.ShutDown()
	q.Add("a1")
	item, _ := q.Get()
	q.AddRateLimited(item)
	q.Done(item)
	if n := q.NumRequeues("a1"); n != 1 {
		t.Errorf("NumRequeues %d, want 1", n)
	}
	q.Add("a2")
	q.Add("b1")
	if got := drain(q); !reflect.DeepEqual(got, []string{"a2", "b1"}) {
		t.Fatalf("before the backoff: %v, want [a2 b1]", got)
	}
	clk.Step(time.Second)
	// The delaying queue's goroutine adds a1 back; wait for it without a
	// wall-clock deadline (Get blocks until it arrives).
	item, _ = q.Get()
	if item != "a1" {
		t.Errorf("after the backoff got %q, want a1", item)
	}
	q.Forget(item)
	q.Done(item)
}

func TestTreeOf(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"root", "root"},
		{"root:users", "root:users"},
		{"root:users:alice", "root:users:alice"},
		{"root:users:alice:dev:x", "root:users:alice"},
		{"root:acme", "root:acme"},
		{"root:acme:team-a:b", "root:acme"},
		{"root:usersx:a", "root:usersx"},
		{"", ""},
	} {
		if got := TreeOf(tc.path); got != tc.want {
			t.Errorf("TreeOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestTenants(t *testing.T) {
	var ts Tenants
	if got := ts.Of("c1"); got != "cluster:c1" {
		t.Errorf("unknown cluster: %q", got)
	}
	ts.Learn("c1", "root:users:alice:dev")
	ts.Learn("c2", "root:users:alice")
	ts.Learn("c3", "root:acme:x")
	ts.Learn("c4", "") // ignored
	// The hub's identity headers teach the path of the request's workspace.
	req := httptest.NewRequest("GET", "/whoami", nil)
	sdk.SetIdentity(req.Header, sdk.Identity{User: "bob", Tenant: "root:users:bob:x", Cluster: "c5"})
	ts.Middleware(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), req)
	for cl, want := range map[string]string{"c1": "tree:root:users:alice", "c2": "tree:root:users:alice",
		"c3": "tree:root:acme", "c4": "cluster:c4", "c5": "tree:root:users:bob"} {
		if got := ts.Of(cl); got != want {
			t.Errorf("Of(%s) = %q, want %q", cl, got, want)
		}
	}
	if got := ts.OfKey(clusters.ToKey("c1", "default", "g")); got != "tree:root:users:alice" {
		t.Errorf("OfKey: %q", got)
	}
}
