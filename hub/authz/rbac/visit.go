package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
)

// visitor receives each rule that applies to a user, with the binding that
// grants it, or an error for a binding whose role cannot be resolved.
// Returning false stops the walk early (the authorizer stops at the first
// allowing rule).
type visitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// userKeys lists the subject keys a user is known by: its name and each of
// its groups. ServiceAccounts need nothing more, because their subjects are
// filed under the account's user name.
func userKeys(u user.Info) []subjectKey {
	groups := u.GetGroups()
	keys := make([]subjectKey, 0, 1+len(groups))
	if name := u.GetName(); name != "" {
		keys = append(keys, subjectKey{userSubject, name})
	}
	for _, g := range groups {
		keys = append(keys, subjectKey{groupSubject, g})
	}
	return keys
}

// visitRulesFor walks the rules granted to u by this cluster's
// ClusterRoleBindings and, when namespace is set, by the RoleBindings of that
// namespace. Only bindings filed under one of u's keys are touched. Bindings
// are visited once each, in name order, so results are deterministic.
func (ci *clusterIndex) visitRulesFor(u user.Info, namespace string, visit visitor) {
	keys := userKeys(u)

	var crbs []*rbacv1.ClusterRoleBinding
	for _, k := range keys {
		for _, b := range ci.crbBySubject[k] {
			crbs = append(crbs, b)
		}
	}
	for _, b := range sortedUnique(crbs, func(b *rbacv1.ClusterRoleBinding) string { return b.Name }) {
		src := bindingSource{kind: "ClusterRoleBinding", name: b.Name, roleRef: b.RoleRef, subject: appliedSubject(b.Subjects, "", keys)}
		if !ci.visitBinding(src, b.RoleRef, "", visit) {
			return
		}
	}

	if namespace == "" {
		return
	}
	var rbs []*rbacv1.RoleBinding
	for _, k := range keys {
		for _, b := range ci.rbBySubject[nsSubject{namespace, k}] {
			rbs = append(rbs, b)
		}
	}
	for _, b := range sortedUnique(rbs, func(b *rbacv1.RoleBinding) string { return b.Name }) {
		src := bindingSource{kind: "RoleBinding", namespace: namespace, name: b.Name, roleRef: b.RoleRef, subject: appliedSubject(b.Subjects, namespace, keys)}
		if !ci.visitBinding(src, b.RoleRef, namespace, visit) {
			return
		}
	}
}

func (ci *clusterIndex) visitBinding(src bindingSource, ref rbacv1.RoleRef, namespace string, visit visitor) bool {
	lists, err := ci.roleRefRules(ref, namespace)
	if err != nil {
		return visit(nil, nil, fmt.Errorf("%s: %w", src, err))
	}
	for _, rules := range lists {
		for i := range rules {
			if !visit(src, &rules[i], nil) {
				return false
			}
		}
	}
	return true
}

// roleRefRules resolves a binding's roleRef within this cluster. A Role is
// looked up in the binding's namespace, so a RoleBinding can never borrow a
// Role from another namespace, and a ClusterRoleBinding cannot name a Role.
func (ci *clusterIndex) roleRefRules(ref rbacv1.RoleRef, namespace string) ([][]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		if namespace == "" {
			return nil, fmt.Errorf("a cluster-wide binding cannot reference Role %q", ref.Name)
		}
		r, ok := ci.roles[nsName{namespace, ref.Name}]
		if !ok {
			return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), ref.Name)
		}
		return [][]rbacv1.PolicyRule{r.Rules}, nil
	case "ClusterRole":
		rules, ok := ci.clusterRoleRules(ref.Name)
		if !ok {
			return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), ref.Name)
		}
		return rules, nil
	}
	return nil, fmt.Errorf("unsupported roleRef kind %q", ref.Kind)
}

// sortedUnique orders bindings by name and drops repeats, which occur when a
// binding names both the user and one of its groups.
func sortedUnique[T comparable](in []T, name func(T) string) []T {
	if len(in) < 2 {
		return in
	}
	slices.SortFunc(in, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	return slices.Compact(in)
}

// bindingSource names the binding that granted a rule, and the subject of
// it that applied, for decision reasons. Its text is upstream's
// ("RoleBinding "name/namespace" of Role "r" to User "alice""): clients and
// scripts read SubjectAccessReview status.reason.
type bindingSource struct {
	kind, namespace, name string
	roleRef               rbacv1.RoleRef
	subject               *rbacv1.Subject
}

func (s bindingSource) String() string {
	name := s.name
	if s.namespace != "" {
		name = s.name + "/" + s.namespace
	}
	out := fmt.Sprintf("%s %q of %s %q", s.kind, name, s.roleRef.Kind, s.roleRef.Name)
	if s.subject == nil {
		return out
	}
	return out + " to " + describeSubject(*s.subject, s.namespace)
}

// describeSubject renders a subject as upstream does; a ServiceAccount is
// "name/namespace", its namespace defaulting to the binding's.
func describeSubject(s rbacv1.Subject, bindingNS string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNS
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// appliedSubject returns the first of a binding's subjects that names one
// of the user's keys, as upstream reports the first subject that applies.
func appliedSubject(subjects []rbacv1.Subject, bindingNS string, keys []subjectKey) *rbacv1.Subject {
	for i := range subjects {
		k, ok := subjectKeyOf(subjects[i], bindingNS)
		if ok && slices.Contains(keys, k) {
			return &subjects[i]
		}
	}
	return nil
}

// binds reports whether a binding of this cluster names one of u's keys.
// RoleBindings are filed per namespace, so those are scanned; the scan
// stops at the first match and touches only the subject index.
func (ci *clusterIndex) binds(u user.Info) bool {
	keys := userKeys(u)
	for _, k := range keys {
		if len(ci.crbBySubject[k]) > 0 {
			return true
		}
	}
	want := make(map[subjectKey]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	for s, bs := range ci.rbBySubject {
		if len(bs) > 0 && want[s.subject] {
			return true
		}
	}
	return false
}
