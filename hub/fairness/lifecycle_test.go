package fairness

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	fakeclock "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/testing/eventclock"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
)

// A tenant's Workspace create or delete keeps her whole mutating share
// for workspaceWork after it is answered (the work it leaves to the hub):
// her next write waits (here, with no queue, is refused), another
// tenant's is served at once, and once the time has passed she is served
// again (review 5, #24).
func TestWorkspaceLifecycleHoldsTheTenantsShare(t *testing.T) {
	clk, _ := fakeclock.NewFake(time.Unix(1_700_000_000, 0), 0, nil)
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 4, TenantMutating: 4},
		HubQueues: 8, Estimator: NewEstimator(100), Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := chain(t, c, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	send := func(who, verb, resource string) int {
		r := httptest.NewRequest(http.MethodPost, "/apis/x", nil)
		ctx := apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: who})
		info := &apirequest.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: "tenancy.wharf.dev", APIVersion: "v1alpha1", Resource: resource}
		if resource == "configmaps" {
			info.APIGroup, info.APIVersion, info.Namespace = "", "v1", "default"
		}
		if verb == "delete" {
			info.Name = "w1"
		}
		ctx = apirequest.WithRequestInfo(ctx, info)
		ctx = cluster.WithTarget(ctx, cluster.Target{Raw: string(home.PathOf(who)), Explicit: true})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(ctx))
		return w.Code
	}
	steps := []struct {
		what            string
		who, verb, kind string
		want            int
	}{
		{"bob creates a workspace", "bob", "create", "workspaces", http.StatusCreated},
		{"bob's next write waits for the work it left", "bob", "create", "configmaps", http.StatusTooManyRequests},
		{"so does his next workspace", "bob", "create", "workspaces", http.StatusTooManyRequests},
		{"alice is served", "alice", "create", "configmaps", http.StatusCreated},
		{"alice's workspace too", "alice", "create", "workspaces", http.StatusCreated},
		{"bob may still read", "bob", "list", "workspaces", http.StatusCreated},
	}
	for i, s := range steps {
		if got := send(s.who, s.verb, s.kind); got != s.want {
			t.Fatalf("step %d, %s: %d, want %d", i, s.what, got, s.want)
		}
	}
	clk.SetTime(clk.Now().Add(workspaceWork))
	for _, s := range []struct {
		what            string
		who, verb, kind string
	}{
		{"bob writes again once the work's time has passed", "bob", "create", "configmaps"},
		{"and deletes a workspace", "bob", "delete", "workspaces"},
	} {
		if got := send(s.who, s.verb, s.kind); got != http.StatusCreated {
			t.Fatalf("%s: %d, want 201", s.what, got)
		}
	}
	if got := send("bob", "create", "configmaps"); got != http.StatusTooManyRequests {
		t.Fatalf("after his delete, bob's write: %d, want 429", got)
	}
}

func TestWorkspaceLifecycle(t *testing.T) {
	for _, tt := range []struct {
		info apirequest.RequestInfo
		want bool
	}{
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIGroup: "tenancy.wharf.dev", Resource: "workspaces"}, true},
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "delete", APIGroup: "tenancy.wharf.dev", Resource: "workspaces", Name: "a"}, true},
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIGroup: "tenancy.wharf.dev", Resource: "workspaces"}, true},
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "update", APIGroup: "tenancy.wharf.dev", Resource: "workspaces", Name: "a"}, false},
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIGroup: "tenancy.wharf.dev", Resource: "workspaces", Subresource: "status"}, false},
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIGroup: "", Resource: "configmaps"}, false},
		{apirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIGroup: "evil.example", Resource: "workspaces"}, false},
	} {
		if got := workspaceLifecycle(&tt.info); got != tt.want {
			t.Errorf("%+v: %v, want %v", tt.info, got, tt.want)
		}
	}
}
