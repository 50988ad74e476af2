package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/storage"
)

const (
	clusterA cluster.ID = "aaaaaaaaaaaaaaaa"
	clusterB cluster.ID = "bbbbbbbbbbbbbbbb"
)

// rule builds a PolicyRule from comma lists. An empty groups list means the
// core group ([""]); empty resources or urls mean none.
func rule(verbs, groups, resources, urls string) rbacv1.PolicyRule {
	list := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	r := rbacv1.PolicyRule{Verbs: list(verbs), Resources: list(resources), NonResourceURLs: list(urls)}
	if r.Resources != nil {
		r.APIGroups = strings.Split(groups, ",")
	}
	return r
}

func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

func objMeta(id cluster.ID, ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{storage.ClusterAnnotation: string(id)}}
}

func newRole(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func newClusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// subjects parses "User:alice", "Group:devs", "ServiceAccount:ns/name" and
// "ServiceAccount:name" (no namespace).
func subjects(specs ...string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, len(specs))
	for i, s := range specs {
		kind, name, _ := strings.Cut(s, ":")
		out[i] = rbacv1.Subject{Kind: kind, Name: name}
		switch kind {
		case rbacv1.ServiceAccountKind:
			if ns, n, ok := strings.Cut(name, "/"); ok {
				out[i].Namespace, out[i].Name = ns, n
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			out[i].APIGroup = rbacv1.GroupName
		default:
			panic(fmt.Sprintf("bad subject %q", s))
		}
	}
	return out
}

// newRoleBinding binds roleRef "Role:name" or "ClusterRole:name" in ns.
func newRoleBinding(ns, name, roleRef string, subs ...string) *rbacv1.RoleBinding {
	kind, rn, _ := strings.Cut(roleRef, ":")
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: rn},
		Subjects:   subjects(subs...),
	}
}

func newClusterRoleBinding(name, clusterRole string, subs ...string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   subjects(subs...),
	}
}

// policy is one cluster's worth of RBAC objects.
type policy struct {
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

// load files p into the index under cluster id, bypassing informers (those
// are covered by informer_test.go).
func (p policy) load(a *Authorizer, id cluster.ID) {
	a.idx.update(id, func(ci *clusterIndex) {
		for _, r := range p.roles {
			ci.putRole(r.Namespace, r)
		}
		for _, r := range p.clusterRoles {
			ci.putClusterRole(r)
		}
		for _, b := range p.roleBindings {
			ci.putRoleBinding(b.Namespace, b)
		}
		for _, b := range p.clusterRoleBindings {
			ci.putClusterRoleBinding(b)
		}
	})
	a.aggregateLater(id)
}

func in(id cluster.ID) context.Context {
	return cluster.WithCluster(context.Background(), id)
}

// asUser is a request context in cluster id, namespace ns, for escalation
// checks, which read the user and namespace from the context.
func asUser(id cluster.ID, ns string, u user.Info) context.Context {
	ctx := request.WithUser(in(id), u)
	if ns != "" {
		ctx = request.WithNamespace(ctx, ns)
	}
	return ctx
}

func usr(name string, groups ...string) user.Info {
	return &user.DefaultInfo{Name: name, Groups: groups}
}

// res is a resource request: verb, group, resource, subresource, ns, name.
func res(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
		Namespace: ns, Name: name, ResourceRequest: true,
	}
}

func nonRes(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}

func describe(a authorizer.AttributesRecord) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("%s(%v) %s %s", a.User.GetName(), a.User.GetGroups(), a.Verb, a.Path)
	}
	return fmt.Sprintf("%s(%v) %s %s/%s group=%q ns=%q name=%q", a.User.GetName(), a.User.GetGroups(),
		a.Verb, a.Resource, a.Subresource, a.APIGroup, a.Namespace, a.Name)
}

// sa is a ServiceAccount user as the hub's token authenticator presents it.
func sa(ns, name string) user.Info {
	return &user.DefaultInfo{
		Name:   "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
}

// rebound returns p with every binding's subjects replaced by one user, so
// another cluster can hold the same roles and binding names without granting
// the users of p anything.
func (p policy) rebound(name string) policy {
	out := policy{roles: p.roles, clusterRoles: p.clusterRoles}
	for _, b := range p.roleBindings {
		c := b.DeepCopy()
		c.Subjects = subjects("User:" + name)
		out.roleBindings = append(out.roleBindings, c)
	}
	for _, b := range p.clusterRoleBindings {
		c := b.DeepCopy()
		c.Subjects = subjects("User:" + name)
		out.clusterRoleBindings = append(out.clusterRoleBindings, c)
	}
	return out
}
