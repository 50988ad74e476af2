package server

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestBuiltinGrants: every authenticated caller holds upstream's
// bootstrap grants, named as upstream names them in decision reasons;
// without system:authenticated nothing is granted; nothing else is.
func TestBuiltinGrants(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	bare := &user.DefaultInfo{Name: "alice"}
	res := func(u user.Info, verb, group, resource string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true}
	}
	path := func(u user.Info, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "get", Path: p}
	}
	for _, tc := range []struct {
		attrs  authorizer.AttributesRecord
		reason string // "" means no opinion
	}{
		{res(alice, "create", "authorization.k8s.io", "selfsubjectaccessreviews"),
			`RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`},
		{res(alice, "create", "authentication.k8s.io", "selfsubjectreviews"),
			`RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`},
		{path(alice, "/apis/rbac.authorization.k8s.io"),
			`RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{path(alice, "/healthz"),
			`RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{res(alice, "create", "authorization.k8s.io", "subjectaccessreviews"), ""},
		{res(alice, "get", "", "configmaps"), ""},
		{path(alice, "/metrics"), ""},
		{path(bare, "/api"), ""},
		{res(bare, "create", "authorization.k8s.io", "selfsubjectaccessreviews"), ""},
	} {
		d, reason, err := authorizeBuiltin(context.Background(), tc.attrs)
		if err != nil {
			t.Fatal(err)
		}
		want := authorizer.DecisionAllow
		if tc.reason == "" {
			want = authorizer.DecisionNoOpinion
		}
		if d != want || reason != tc.reason {
			t.Errorf("%+v: %v %q, want %v %q", tc.attrs, d, reason, want, tc.reason)
		}
	}

	// SelfSubjectRulesReview lists them as kube does: three resources, and
	// the health and version paths twice (two roles grant them).
	res2, nonRes, incomplete, err := builtinRules{}.RulesFor(context.Background(), alice, "default")
	if err != nil || incomplete || len(res2) != 2 || len(nonRes) != 2 {
		t.Fatalf("rules %v %v %v %v", res2, nonRes, incomplete, err)
	}
	if r, n, _, _ := (builtinRules{}).RulesFor(context.Background(), bare, "default"); len(r)+len(n) != 0 {
		t.Errorf("without system:authenticated: %v %v", r, n)
	}
}
