package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

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
