package server

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
	"github.com/wharfhub/wharf/hub/proxy"
	"github.com/wharfhub/wharf/hub/serviceaccounts"
)

// TestServiceAccountBinding runs the hub's real authorizer chain and the
// backend proxy's workspace check over a real workspace index. The chain's
// last step allows everything here (and system:serviceaccounts is named an
// administrator group, which a confined identity never uses: admins.has),
// so that only the binding step can be what refuses a token outside its
// workspace.
func TestServiceAccountBinding(t *testing.T) {
	ctx := context.Background()
	index, clusters := indexWith(t, "root:a", "root:b")
	a, b := clusters[0], clusters[1]
	chain, _, err := newAuthorizer(admins{groups: sets.New("system:serviceaccounts", user.SystemPrivilegedGroup)}, &workspaceRBAC{resolver: index},
		authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionAllow, "", nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	sa := serviceaccounts.UserInfo(serviceaccounts.Subject{Cluster: a, Namespace: "default", Name: "bot", UID: "u"}, "")
	admin := &user.DefaultInfo{Name: "root-admin", Groups: []string{user.SystemPrivilegedGroup}}
	target := func(raw string) context.Context {
		return cluster.WithTarget(ctx, cluster.Target{Raw: raw, Explicit: true})
	}

	for _, tc := range []struct {
		name  string
		ctx   context.Context
		user  user.Info
		allow bool
	}{
		{"token in its workspace, by path", target("root:a"), sa, true},
		{"token in its workspace, by id", target(string(a)), sa, true},
		{"token in another workspace, by path", target("root:b"), sa, false},
		{"token in another workspace, by id", target(string(b)), sa, false},
		{"token in root", target("root"), sa, false},
		{"token on /clusters/*", target(cluster.WildcardRaw), sa, false},
		{"admin in another workspace", target("root:b"), admin, true},
		{"admin on /clusters/*", target(cluster.WildcardRaw), admin, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, attrs := range []authorizer.AttributesRecord{
				{User: tc.user, Verb: "list", Resource: "configmaps", Namespace: "default", ResourceRequest: true},
				{User: tc.user, Verb: "get", Path: "/api"},
			} {
				d, reason, err := chain.Authorize(tc.ctx, attrs)
				if err != nil && d != authorizer.DecisionDeny {
					t.Fatal(err)
				}
				if (d == authorizer.DecisionAllow) != tc.allow {
					t.Fatalf("%s %s: decision %v (%s), want allow=%v", attrs.Verb, attrs.Resource+attrs.Path, d, reason, tc.allow)
				}
			}
		})
	}

	// The backend proxy's workspace check asks the same chain.
	ids := workspaceIdentity{index: index, authz: chain, homes: home.NewManager(index, chain)}
	for _, tc := range []struct {
		ws    string
		allow bool
	}{{"root:a", true}, {string(a), true}, {"root:b", false}, {string(b), false}} {
		id, err := ids.Resolve(ctx, sa, tc.ws)
		var forbidden *proxy.ForbiddenError
		if tc.allow && (err != nil || id.Cluster != string(a)) {
			t.Errorf("backend access to %q: %+v %v", tc.ws, id, err)
		}
		if !tc.allow && !errors.As(err, &forbidden) {
			t.Errorf("backend access to %q: want forbidden, got %+v %v", tc.ws, id, err)
		}
	}
	// Without a workspace named, a service account acts in its own.
	if id, err := ids.Resolve(ctx, sa, ""); err != nil || id.Cluster != string(a) {
		t.Errorf("backend access without a workspace: want its own workspace %s, got %+v %v", a, id, err)
	}
}
