package providerauth

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// TestAuthorizerAggregation: where it is enabled a provider may manage
// APIServices (admission confines it to its own) and impersonate
// wharf:workspace:<path> users, nothing else; elsewhere neither.
func TestAuthorizerAggregation(t *testing.T) {
	s := scope{enabled: map[cluster.ID][]string{"a": {"resource-proxy"}}}
	a := NewAuthorizer(s, func(ctx context.Context) (cluster.ID, bool, bool) {
		v, _ := ctx.Value(reqCtx{}).(string)
		if v == "*" {
			return "", true, true
		}
		return cluster.ID(v), false, true
	})
	rp := &user.DefaultInfo{Name: providersv1alpha1.ProviderUser("resource-proxy"), Groups: []string{providersv1alpha1.ProvidersGroup}}
	alice := &user.DefaultInfo{Name: "alice"}
	svc := func(u user.Info, verb, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: "apiregistration.k8s.io", Resource: "apiservices", Subresource: sub, ResourceRequest: true}
	}
	imp := func(u user.Info, group, resource, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "impersonate", APIGroup: group, Resource: resource, Name: name, ResourceRequest: true}
	}
	allow, none := authorizer.DecisionAllow, authorizer.DecisionNoOpinion
	for _, c := range []struct {
		name    string
		cluster string
		attrs   authorizer.AttributesRecord
		want    authorizer.Decision
	}{
		{"create apiservice where enabled", "a", svc(rp, "create", ""), allow},
		{"delete apiservice where enabled", "a", svc(rp, "delete", ""), allow},
		{"watch apiservices where enabled", "a", svc(rp, "watch", ""), allow},
		{"deletecollection is not granted", "a", svc(rp, "deletecollection", ""), none},
		{"status is the hub's", "a", svc(rp, "update", "status"), none},
		{"apiservice where not enabled", "b", svc(rp, "create", ""), none},
		{"apiservices across workspaces", "*", svc(rp, "list", ""), authorizer.DecisionDeny},
		{"a user gets nothing from this authorizer", "a", svc(alice, "create", ""), none},
		{"impersonate a workspace where enabled", "a", imp(rp, "", "users", "wharf:workspace:root:b"), allow},
		{"impersonate a workspace where not enabled", "b", imp(rp, "", "users", "wharf:workspace:root:a"), none},
		{"impersonate the bare prefix", "a", imp(rp, "", "users", "wharf:workspace:"), none},
		{"impersonate a plain user", "a", imp(rp, "", "users", "alice"), none},
		{"impersonate a lookalike", "a", imp(rp, "", "users", "wharf:workspaces:root"), none},
		{"impersonate a group", "a", imp(rp, "", "groups", "wharf:workspace:root:b"), none},
		{"impersonate a service account", "a", imp(rp, "", "serviceaccounts", "wharf:workspace:root:b"), none},
		{"impersonate extras", "a", imp(rp, "authentication.k8s.io", "userextras", "wharf:workspace:root:b"), none},
		{"impersonate uids", "a", imp(rp, "authentication.k8s.io", "uids", "wharf:workspace:root:b"), none},
		{"a user impersonating gets nothing", "a", imp(alice, "", "users", "wharf:workspace:root:b"), none},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := a.Authorize(context.WithValue(context.Background(), reqCtx{}, c.cluster), c.attrs)
			if err != nil || got != c.want {
				t.Errorf("got %v (%v), want %v", got, err, c.want)
			}
		})
	}
}
