package fairness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
)

// held is a handler that keeps each request in flight until released,
// like a slow request body does.
type held struct {
	entered chan struct{}
	release chan struct{}
}

func (h held) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.entered <- struct{}{}
	<-h.release
	w.WriteHeader(http.StatusCreated)
}

func TestWithLimit(t *testing.T) {
	s := scheme.NewCodecs(scheme.New())
	bob := &user.DefaultInfo{Name: "bob"}
	bobSA := &user.DefaultInfo{Name: "system:serviceaccount:default:a", Extra: map[string][]string{cluster.ConfinedExtra: {"bobhome00000000a"}}}
	alice := &user.DefaultInfo{Name: "alice"}
	admin := &user.DefaultInfo{Name: "hubadmin"}
	k := Keyer{
		IsAdmin: func(u user.Info) bool { return u.GetName() == "hubadmin" },
		PathOf: func(_ context.Context, id cluster.ID) (cluster.Path, error) {
			return home.PathOf("bob").Join("child"), nil
		},
	}
	anon := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	type req struct {
		u        user.Info
		verb     string
		path     string // a non-resource request to path; "": a configmap
		longRun  bool
		wantHeld bool // held in flight; otherwise answered at once with want
		want     int
	}
	for _, tt := range []struct {
		name string
		reqs []req
	}{
		{"bob's share, then others are served", []req{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", want: http.StatusTooManyRequests},
			{u: bobSA, verb: "create", want: http.StatusTooManyRequests},
			{u: alice, verb: "create", wantHeld: true},
			{u: admin, verb: "create", wantHeld: true},
		}},
		{"service accounts share their person's share", []req{
			{u: bobSA, verb: "update", wantHeld: true},
			{u: bobSA, verb: "patch", wantHeld: true},
			{u: bob, verb: "delete", want: http.StatusTooManyRequests},
		}},
		{"read-only is a budget of its own", []req{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "get", wantHeld: true},
			{u: bob, verb: "list", wantHeld: true},
		}},
		{"long-running requests are not counted", []req{
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "create", wantHeld: true},
			{u: bob, verb: "watch", longRun: true, wantHeld: true},
		}},
		{"health probes are exempt, as upstream's probes FlowSchema", []req{
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
		{"sub-paths and other verbs of the health paths are counted", []req{
			{u: anon, verb: "get", path: "/readyz/etcd", wantHeld: true},
			{u: anon, verb: "get", path: "/livez/", wantHeld: true},
			{u: anon, verb: "get", path: "/readyz", wantHeld: true},
			{u: anon, verb: "get", path: "//readyz", want: http.StatusTooManyRequests},
			{u: anon, verb: "post", path: "/readyz", wantHeld: true},
			{u: anon, verb: "head", path: "/readyz", wantHeld: true},
			{u: anon, verb: "put", path: "/readyz", want: http.StatusTooManyRequests},
		}},
		{"hub-wide budget, admins still served", []req{
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
			h := held{entered: make(chan struct{}), release: make(chan struct{})}
			f := Filter{Limiter: NewLimiter(Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 2, TenantMutating: 2}), Keyer: k}
			longRunning := func(r *http.Request, _ *apirequest.RequestInfo) bool { return r.Header.Get("long") != "" }
			limited := f.WithLimit(h, longRunning, s)
			var done []chan int
			for i, rq := range tt.reqs {
				r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", nil)
				if rq.longRun {
					r.Header.Set("long", "1")
				}
				ctx := apirequest.WithUser(r.Context(), rq.u)
				info := &apirequest.RequestInfo{IsResourceRequest: true, Verb: rq.verb, APIVersion: "v1", Resource: "configmaps"}
				if rq.path != "" {
					info = &apirequest.RequestInfo{Verb: rq.verb, Path: rq.path}
				}
				ctx = apirequest.WithRequestInfo(ctx, info)
				w := httptest.NewRecorder()
				answered := make(chan int, 1)
				go func() { limited.ServeHTTP(w, r.WithContext(ctx)); answered <- w.Code }()
				select {
				case <-h.entered:
					if !rq.wantHeld {
						t.Fatalf("request %d (%s %s) was let in", i, rq.u.GetName(), rq.verb)
					}
					done = append(done, answered)
				case code := <-answered:
					if rq.wantHeld || code != rq.want {
						t.Fatalf("request %d (%s %s): answered %d, want held %v / %d", i, rq.u.GetName(), rq.verb, code, rq.wantHeld, rq.want)
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
		})
	}
}

func checkTooMany(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if got := w.Header().Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After %q, want 1", got)
	}
	var st metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("not a Status: %v: %s", err, w.Body)
	}
	if st.Kind != "Status" || st.Code != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests || st.Message != Message {
		t.Fatalf("Status %+v", st)
	}
}
