package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestHubGuards(t *testing.T) {
	g := hubGuards(admins{users: sets.New("root-op"), groups: sets.New("system:masters", "platform")}, func(ctx context.Context) context.Context { return ctx })
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	hubAdmin := &user.DefaultInfo{Name: "bob", Groups: []string{"platform"}}
	imp := func(u user.Info, resource, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "impersonate", Resource: resource, Name: name, ResourceRequest: true}
	}
	crd := func(u user.Info, verb string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "widgets.example.com", ResourceRequest: true}
	}
	for _, tc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		deny  bool
	}{
		{"impersonate hub admin group", imp(alice, "groups", "system:masters"), true},
		{"impersonate configured admin group", imp(alice, "groups", "platform"), true},
		{"impersonate configured admin user", imp(alice, "users", "root-op"), true},
		{"impersonate provider identity", imp(alice, "users", "system:wharf:provider:edges"), true},
		{"impersonate provider group", imp(alice, "groups", "system:wharf:providers"), true},
		{"impersonate workspace group of a service account", imp(alice, "groups", "system:cluster:abc"), true},
		{"impersonate kube-style system user", imp(alice, "users", "system:kube-controller-manager"), true},
		{"impersonate ordinary user", imp(alice, "users", "carol"), false},
		{"impersonate ordinary group", imp(alice, "groups", "dev"), false},
		{"impersonate authenticated group", imp(alice, "groups", "system:authenticated"), false},
		{"impersonate service account user", imp(alice, "users", "system:serviceaccount:default:bot"), false},
		{"impersonate service account groups", imp(alice, "groups", "system:serviceaccounts:default"), false},
		{"impersonate service account resource", imp(alice, "serviceaccounts", "bot"), false},
		{"hub admin may impersonate masters", imp(hubAdmin, "groups", "system:masters"), false},
		{"create CRD", crd(alice, "create"), true},
		{"patch CRD", crd(alice, "patch"), true},
		{"delete CRD", crd(alice, "delete"), true},
		{"delete all CRDs", crd(alice, "deletecollection"), true},
		{"read CRD", crd(alice, "get"), false},
		{"list CRDs", crd(alice, "list"), false},
		{"hub admin creates CRD", crd(hubAdmin, "create"), false},
		{"ordinary write", authorizer.AttributesRecord{User: alice, Verb: "create", Resource: "configmaps", ResourceRequest: true}, false},
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
		})
	}
}
