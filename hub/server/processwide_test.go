package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestProcessWideGuard(t *testing.T) {
	g := processWideGuard(admins{users: sets.New("root-op"), groups: sets.New("system:masters")})
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	op := &user.DefaultInfo{Name: "root-op"}
	masters := &user.DefaultInfo{Name: "x", Groups: []string{"system:masters"}}
	path := func(u user.Info, verb, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Path: p}
	}
	for _, tc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		deny  bool
	}{
		{"metrics", path(alice, "get", "/metrics"), true},
		{"metrics sub-path", path(alice, "get", "/metrics/slis"), true},
		{"pprof", path(alice, "get", "/debug/pprof/heap"), true},
		{"log level", path(alice, "put", "/debug/flags/v"), true},
		{"priority and fairness dump", path(alice, "get", "/debug/api_priority_and_fairness/dump_requests"), true},
		{"logs", path(alice, "get", "/logs"), true},
		{"flagz", path(alice, "get", "/flagz"), true},
		{"statusz", path(alice, "get", "/statusz"), true},
		{"configz", path(alice, "get", "/configz"), true},
		{"path index", path(alice, "get", "/"), true},
		{"health check detail", path(alice, "get", "/readyz/etcd"), true},
		{"unknown path", path(alice, "get", "/whatever"), true},
		{"traversal out of /api", path(alice, "get", "/api/../metrics"), true},
		{"double slash", path(alice, "get", "/api//../metrics"), true},
		{"relative", path(alice, "get", "metrics"), true},
		{"empty", path(alice, "get", ""), true},
		{"access is for / only", path(alice, "access", "/metrics"), true},
		{"api", path(alice, "get", "/api"), false},
		{"api version", path(alice, "get", "/api/v1"), false},
		{"whoami", path(alice, "get", "/api/whoami"), false},
		{"apis group", path(alice, "get", "/apis/tenancy.wharf.dev"), false},
		{"openapi", path(alice, "get", "/openapi/v3/api/v1"), false},
		{"version", path(alice, "get", "/version"), false},
		{"version slash", path(alice, "get", "/version/"), false},
		{"healthz", path(alice, "get", "/healthz"), false},
		{"livez", path(alice, "get", "/livez"), false},
		{"readyz", path(alice, "get", "/readyz"), false},
		{"workspace access check", path(alice, "access", "/"), false},
		{"admin user reads metrics", path(op, "get", "/metrics"), false},
		{"masters set the log level", path(masters, "put", "/debug/flags/v"), false},
		{"resource requests are not its business", authorizer.AttributesRecord{User: alice, Verb: "get", Resource: "configmaps", ResourceRequest: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := g.Authorizer.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionDeny; got != tc.deny {
				t.Fatalf("deny = %v (%q), want %v", got, reason, tc.deny)
			}
			if !tc.deny && d != authorizer.DecisionNoOpinion {
				t.Fatalf("a guard never allows; got %v", d)
			}
			if tc.deny {
				// Denials look alike and like kube-apiserver's RBAC
				// denial: no reason at all.
				if reason != "" {
					t.Errorf("reason %q, want none", reason)
				}
			}
		})
	}
}
