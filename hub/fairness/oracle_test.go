package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestSameChargeWhetherHiddenOrMissing (outside attack review, row 3):
// what a request is charged (its flow, that is its tenant, and its width
// in seats) must not depend on whether a workspace the caller may not see
// exists. It did: alice's own lists of her home taught the estimator its
// size, so mallory's list there cost one seat, while a list of a missing
// workspace cost her whole share; under a flood the share of 429s told
// the two apart.
func TestSameChargeWhetherHiddenOrMissing(t *testing.T) {
	e := NewEstimator(100)
	keyer := testKeyer()
	alice := &user.DefaultInfo{Name: "alice"}
	mallory := &user.DefaultInfo{Name: "mallory"}
	malloryTenant, _ := keyer.Tenant(context.Background(), mallory)
	list := &apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "configmaps", Namespace: "default"}
	as := func(u user.Info, ws string) context.Context {
		ctx := apirequest.WithUser(context.Background(), u)
		return cluster.WithTarget(ctx, cluster.Target{Raw: ws, Explicit: true})
	}
	const share, most = 40, 100
	// alice lists her home: small, one seat for her from now on.
	hidden, missing := "root:users:alice", "root:users:nobody"
	h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps", nil)
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(as(alice, hidden), list)))
	if got := e.Seats(as(alice, hidden), list, "", share, most); got != 1 {
		t.Fatalf("alice's own list after learning its size: %d seats, want 1", got)
	}
	for _, target := range []string{hidden, missing} {
		ctx := as(mallory, target)
		if tenant, exempt := keyer.Tenant(ctx, mallory); exempt || tenant != malloryTenant {
			t.Errorf("mallory's request to %s is charged to %q (exempt %v), want her own tenant %q", target, tenant, exempt, malloryTenant)
		}
		if got := e.Seats(ctx, list, "", share, most); got != share {
			t.Errorf("mallory's list of %s costs %d seats, want %d (what she never listed herself costs her whole share, wherever it is)", target, got, share)
		}
	}
	// A 403 teaches nothing: only lists the caller was allowed (200) do.
	denied := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	denied.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(as(mallory, hidden), list)))
	if got := e.Seats(as(mallory, hidden), list, "", share, most); got != share {
		t.Errorf("after a denied list: %d seats, want %d", got, share)
	}
	// Service accounts of the same name in two workspaces are two callers.
	sa := func(id string) *user.DefaultInfo {
		return &user.DefaultInfo{Name: "system:serviceaccount:default:ci", Extra: map[string][]string{cluster.ConfinedExtra: {id}}}
	}
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(as(sa("aaaaaaaaaaaaaaaa"), hidden), list)))
	if got := e.Seats(as(sa("bbbbbbbbbbbbbbbb"), hidden), list, "", share, most); got != share {
		t.Errorf("another workspace's service account of the same name: %d seats, want %d", got, share)
	}
}

// TestPrepareHoldsNoSeat: Keyer.Prepare (the hub resolves the request's
// workspace there, reading etcd for one not in memory) runs before the
// request takes seats, for counted requests only: while one request of
// bob's is being prepared, another of his, with his share of one seat,
// is let in.
func TestPrepareHoldsNoSeat(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	prepared := make(chan string, 4)
	block := make(chan struct{})
	keyer := testKeyer()
	first := true
	var mu sync.Mutex
	keyer.Prepare = func(ctx context.Context) {
		u, _ := apirequest.UserFrom(ctx)
		// Which request waits is settled before the test hears of it:
		// otherwise the second could take the first's place.
		mu.Lock()
		wait := first
		first = false
		mu.Unlock()
		prepared <- u.GetName()
		if wait {
			<-block
		}
	}
	c, err := NewController(ControllerConfig{
		Keyer: keyer, Limits: Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 1, TenantMutating: 1},
		QueueLength: 0, HubQueues: 8, Clock: eventclock.Real{},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := held{entered: make(chan struct{}), release: make(chan struct{})}
	limited := chain(t, c, h)
	serve := func(u user.Info) chan int {
		answered := make(chan int, 1)
		r := testReq{u: u, verb: "create"}.request()
		go func() {
			w := httptest.NewRecorder()
			limited.ServeHTTP(w, r)
			answered <- w.Code
		}()
		return answered
	}
	a := serve(bob)
	if got := <-prepared; got != "bob" {
		t.Fatalf("prepared %s", got)
	}
	b := serve(bob)
	<-prepared
	<-h.entered // the second is let in while the first is being prepared
	close(block)
	if code := <-a; code != http.StatusTooManyRequests {
		t.Fatalf("the first, once prepared, found bob's one seat taken: %d, want 429", code)
	}
	close(h.release)
	if code := <-b; code != http.StatusCreated {
		t.Fatalf("second: %d", code)
	}
	// Administrators are not counted, and not prepared.
	admin := serve(&user.DefaultInfo{Name: "hubadmin"})
	<-h.entered
	if code := <-admin; code != http.StatusCreated {
		t.Fatalf("admin: %d", code)
	}
	select {
	case who := <-prepared:
		t.Fatalf("%s prepared", who)
	default:
	}
}
