package rbac

import (
	"fmt"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestConcurrentUpdates runs decisions while bindings come and go in the
// same and other clusters; run with -race. Every decision must be either
// allow or no opinion, and the stable grant must never flicker.
func TestConcurrentUpdates(t *testing.T) {
	a := newAuthorizer()
	escalationPolicy().load(a, clusterA)
	stable := res(usr("bob"), "get", "", "configmaps", "", "ns1", "c")

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := clusterA
				if i%2 == 1 {
					id = cluster.ID(fmt.Sprintf("other%011d", w))
				}
				b := newRoleBinding("ns1", fmt.Sprintf("churn-%d", w), "ClusterRole:view", "User:churner")
				a.idx.update(id, func(ci *clusterIndex) { ci.putRoleBinding("ns1", b) })
				a.idx.update(id, func(ci *clusterIndex) { ci.putClusterRole(newClusterRole("extra", rule("get", "", "pods", ""))) })
				a.idx.update(id, func(ci *clusterIndex) { ci.deleteRoleBinding("ns1", b.Name) })
			}
		})
	}
	for range 2000 {
		if d, reason, _ := a.Authorize(in(clusterA), stable); d != authorizer.DecisionAllow {
			t.Fatalf("stable grant flickered: %v %s", d, reason)
		}
		_, _ = a.Rules(in(clusterA), usr("churner"), "ns1")
	}
	close(stop)
	wg.Wait()
}

// TestSubjectKeys pins how binding subjects are filed.
func TestSubjectKeys(t *testing.T) {
	tests := []struct {
		subject rbacv1.Subject
		ns      string
		want    subjectKey
		ok      bool
	}{
		{rbacv1.Subject{Kind: "User", Name: "alice"}, "", subjectKey{userSubject, "alice"}, true},
		{rbacv1.Subject{Kind: "Group", Name: "devs"}, "ns", subjectKey{groupSubject, "devs"}, true},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "bot"}, "ns", subjectKey{userSubject, "system:serviceaccount:ns:bot"}, true},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "bot", Namespace: "other"}, "ns", subjectKey{userSubject, "system:serviceaccount:other:bot"}, true},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "bot"}, "", subjectKey{}, false},
		{rbacv1.Subject{Kind: "Robot", Name: "r2"}, "ns", subjectKey{}, false},
	}
	for _, tc := range tests {
		got, ok := subjectKeyOf(tc.subject, tc.ns)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v in %q: got %+v %v, want %+v %v", tc.subject, tc.ns, got, ok, tc.want, tc.ok)
		}
	}
}
