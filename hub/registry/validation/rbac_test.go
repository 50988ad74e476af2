package validation

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRoles(t *testing.T) {
	ok := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	nonRes := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}
	for _, c := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		role  string // want for a Role
		cr    string // want for a ClusterRole
	}{
		{"ok", []rbacv1.PolicyRule{ok}, "", ""},
		{"empty", []rbacv1.PolicyRule{{}}, "[rules[0].apiGroups: Required value: resource rules must supply at least one api group, rules[0].resources: Required value: resource rules must supply at least one resource, rules[0].verbs: Required value]",
			"[rules[0].apiGroups: Required value: resource rules must supply at least one api group, rules[0].resources: Required value: resource rules must supply at least one resource, rules[0].verbs: Required value]"},
		{"verbs-last", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}, {Verbs: []string{"get"}}, {}}, "[rules[1].apiGroups: Required value: resource rules must supply at least one api group, rules[1].resources: Required value: resource rules must supply at least one resource, rules[2].apiGroups: Required value: resource rules must supply at least one api group, rules[2].resources: Required value: resource rules must supply at least one resource, rules[0].verbs: Required value, rules[2].verbs: Required value]",
			"[rules[1].apiGroups: Required value: resource rules must supply at least one api group, rules[1].resources: Required value: resource rules must supply at least one resource, rules[2].apiGroups: Required value: resource rules must supply at least one api group, rules[2].resources: Required value: resource rules must supply at least one resource, rules[0].verbs: Required value, rules[2].verbs: Required value]"},
		{"nonresource", []rbacv1.PolicyRule{ok, nonRes}, `rules[1].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`, ""},
		{"both", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}, ResourceNames: []string{"n"}}}, `[rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs, rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs]`, `rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`},
	} {
		check(t, "role/"+c.name, Role(&rbacv1.Role{Rules: c.rules}), c.role)
		check(t, "clusterrole/"+c.name, ClusterRole(&rbacv1.ClusterRole{Rules: c.rules}), c.cr)
	}
	agg := func(sel ...metav1.LabelSelector) runtime.Object {
		return &rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: sel}}
	}
	check(t, "aggregation-empty", ClusterRole(agg()), "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")
	check(t, "aggregation-ok", ClusterRole(agg(metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}})), "")
}

func TestBindings(t *testing.T) {
	view := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	for _, c := range []struct {
		name     string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
		rb, crb  string
	}{
		{"ok", view, []rbacv1.Subject{alice}, "", ""},
		{"pod", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Pod", Name: "x"}, nil,
			`roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"`, `roleRef.kind: Unsupported value: "Pod": supported values: "ClusterRole"`},
		{"apigroup", rbacv1.RoleRef{Kind: "ClusterRole", Name: "x"}, nil,
			`roleRef.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`, `roleRef.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`},
		{"no-name", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole"}, nil, `roleRef.name: Required value`, `roleRef.name: Required value`},
		{"subject-name", view, []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName}}, `subjects[0].name: Required value`, `subjects[0].name: Required value`},
		{"subject-kind", view, []rbacv1.Subject{{Kind: "Robot", Name: "r"}},
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`, `subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`},
		{"sa", view, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "s"}}, "", `subjects[0].namespace: Required value`},
		{"sa-apigroup", view, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, APIGroup: "x", Name: "s", Namespace: "d"}},
			`subjects[0].apiGroup: Unsupported value: "x": supported values: ""`, `subjects[0].apiGroup: Unsupported value: "x": supported values: ""`},
	} {
		check(t, "rb/"+c.name, RoleBinding(&rbacv1.RoleBinding{RoleRef: c.ref, Subjects: c.subjects}), c.rb)
		check(t, "crb/"+c.name, ClusterRoleBinding(&rbacv1.ClusterRoleBinding{RoleRef: c.ref, Subjects: c.subjects}), c.crb)
	}
	several := ClusterRoleBinding(&rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{Kind: "Pod"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount"}, {Kind: "x"}}})
	check(t, "crb several", several, `[roleRef.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io", roleRef.kind: Unsupported value: "Pod": supported values: "ClusterRole", subjects[0].namespace: Required value, subjects[1].kind: Unsupported value: "x": supported values: "ServiceAccount", "User", "Group", subjects[0].name: Required value, subjects[1].name: Required value, roleRef.name: Required value]`)
	edit := view
	edit.Name = "edit"
	check(t, "roleRef update", RoleBindingUpdate(&rbacv1.RoleBinding{RoleRef: edit}, &rbacv1.RoleBinding{RoleRef: view}),
		`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: field is immutable`)
}

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := rbacv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	RegisterDefaults(s)
	rb := &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "ServiceAccount", Name: "s"}}}
	s.Default(rb)
	check(t, "defaulted binding", RoleBinding(rb), "")
	if rb.Subjects[1].APIGroup != "" {
		t.Errorf("ServiceAccount subject apiGroup = %q", rb.Subjects[1].APIGroup)
	}
	sec := &corev1.Secret{}
	s.Default(sec)
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret type = %q", sec.Type)
	}
}

func TestLease(t *testing.T) {
	strat := coordinationv1.CoordinatedLeaseStrategy("Bogus")
	for _, c := range []struct {
		name string
		spec coordinationv1.LeaseSpec
		want string
	}{
		{"ok", coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr[int32](1), LeaseTransitions: ptr[int32](0)}, ""},
		{"duration", coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr[int32](0)}, "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"},
		{"transitions", coordinationv1.LeaseSpec{LeaseTransitions: ptr[int32](-1)}, "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"},
		{"strategy", coordinationv1.LeaseSpec{Strategy: &strat}, `spec.strategy.strategy: Unsupported value: "Bogus": supported values: "OldestEmulationVersion"`},
		{"holder", coordinationv1.LeaseSpec{PreferredHolder: ptr("x")}, "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"},
	} {
		check(t, c.name, Lease(&coordinationv1.Lease{Spec: c.spec}), c.want)
	}
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: &strat, PreferredHolder: ptr("x")}}
	DropDisabledLeaseFields(l, nil)
	if l.Spec.Strategy != nil || l.Spec.PreferredHolder != nil {
		t.Errorf("create kept %v", l.Spec)
	}
	old := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: &strat}}
	l = &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: &strat}}
	DropDisabledLeaseFields(l, old)
	if l.Spec.Strategy == nil {
		t.Error("update dropped a stored strategy")
	}
}
