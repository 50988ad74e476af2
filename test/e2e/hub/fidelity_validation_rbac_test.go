package hub

import (
	"strings"
	"testing"
)

// Issue 12 item 2, continued: RBAC, Lease and the ObjectMeta rules of the
// built-in kinds (finalizer names, labels, annotations, names).

const valRBACV1 = "rbac.authorization.k8s.io/v1"
const valRolePath = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
const valRBPath = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
const valCRPath = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
const valCRBPath = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
const valLeasePath = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

func init() {
	registerFidelity("02-valid/rbac", func(t *testing.T, f *fidelity) {
		rule := func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		v, g, r := []string{"get"}, []string{""}, []string{"configmaps"}
		role := func(rules ...map[string]any) string {
			return valObj(valRBACV1, "Role", f.unique("role"), map[string]any{"rules": rules})
		}
		cr := func(extra map[string]any) string { return valObj(valRBACV1, "ClusterRole", f.unique("cr"), extra) }
		ref := func(apiGroup, kind, name string) map[string]any {
			return map[string]any{"apiGroup": apiGroup, "kind": kind, "name": name}
		}
		user := map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "val-user"} // nobody: a binding to view grants on the hub only (kube runs no aggregation controller)
		rb := func(roleRef map[string]any, subjects ...map[string]any) string {
			return valObj(valRBACV1, "RoleBinding", f.unique("rb"), map[string]any{"roleRef": roleRef, "subjects": subjects})
		}
		crb := func(roleRef map[string]any, subjects ...map[string]any) string {
			return valObj(valRBACV1, "ClusterRoleBinding", f.unique("crb"), map[string]any{"roleRef": roleRef, "subjects": subjects})
		}
		view := ref("rbac.authorization.k8s.io", "ClusterRole", "view")
		valCases(t, f, []valCase{
			{"role-no-verbs", valPost(valRolePath, role(rule("apiGroups", g, "resources", r)))},
			{"role-no-apigroups", valPost(valRolePath, role(rule("verbs", v, "resources", r)))},
			{"role-no-resources", valPost(valRolePath, role(rule("verbs", v, "apiGroups", g)))},
			{"role-empty-rule", valPost(valRolePath, role(rule()))},
			{"role-nonresourceurls", valPost(valRolePath, role(rule("verbs", v, "nonResourceURLs", []string{"/healthz"})))},
			{"role-second-rule-bad", valPost(valRolePath, role(rule("verbs", v, "apiGroups", g, "resources", r), rule("verbs", v)))},
			{"role-ok", valPost(valRolePath, role(rule("verbs", v, "apiGroups", g, "resources", r)))},
			{"cr-nonresource-ok", valPost(valCRPath, cr(map[string]any{"rules": []any{rule("verbs", v, "nonResourceURLs", []string{"/healthz"})}}))},
			{"cr-nonresource-and-resources", valPost(valCRPath, cr(map[string]any{"rules": []any{rule("verbs", v, "nonResourceURLs", []string{"/x"}, "resources", r)}}))},
			{"cr-nonresource-and-names", valPost(valCRPath, cr(map[string]any{"rules": []any{rule("verbs", v, "nonResourceURLs", []string{"/x"}, "resourceNames", []string{"a"})}}))},
			{"cr-aggregation-empty", valPost(valCRPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{}}}))},
			{"cr-aggregation-bad-selector", valPost(valCRPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Bogus"}}}}}}))},
			{"cr-aggregation-bad-label", valPost(valCRPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"a b": "c"}}}}}))},
			{"cr-aggregation-and-rules-ok", valPost(valCRPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"x": "y"}}}}, "rules": []any{rule("verbs", v, "apiGroups", g, "resources", r)}}))},
			{"cr-aggregation-and-bad-rules", valPost(valCRPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"x": "y"}}}}, "rules": []any{rule("apiGroups", g)}}))},
			{"rb-roleref-pod", valPost(valRBPath, rb(ref("rbac.authorization.k8s.io", "Pod", "x"), user))},
			{"rb-roleref-apigroup", valPost(valRBPath, rb(ref("example.com", "Role", "x"), user))},
			{"rb-roleref-apigroup-defaulted", valPost(valRBPath, rb(ref("", "ClusterRole", "view"), user))},
			{"rb-roleref-no-name", valPost(valRBPath, rb(ref("rbac.authorization.k8s.io", "Role", ""), user))},
			{"rb-roleref-bad-name", valPost(valRBPath, rb(ref("rbac.authorization.k8s.io", "Role", "a/b"), user))},
			{"rb-subject-no-name", valPost(valRBPath, rb(view, map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": ""}))},
			{"rb-subject-kind", valPost(valRBPath, rb(view, map[string]any{"kind": "Robot", "name": "r"}))},
			{"rb-subject-user-apigroup-defaulted", valPost(valRBPath, rb(view, map[string]any{"kind": "Group", "name": "g"}))},
			{"rb-subject-user-bad-apigroup", valPost(valRBPath, rb(view, map[string]any{"kind": "User", "apiGroup": "v1", "name": "bob"}))},
			{"rb-subject-sa-apigroup", valPost(valRBPath, rb(view, map[string]any{"kind": "ServiceAccount", "apiGroup": "rbac.authorization.k8s.io", "name": "s"}))},
			{"rb-subject-sa-bad-name", valPost(valRBPath, rb(view, map[string]any{"kind": "ServiceAccount", "name": "Bad_Name"}))},
			{"rb-subject-sa-no-namespace-ok", valPost(valRBPath, rb(view, map[string]any{"kind": "ServiceAccount", "name": "s"}))},
			{"crb-roleref-role", valPost(valCRBPath, crb(ref("rbac.authorization.k8s.io", "Role", "x"), user))},
			{"crb-subject-sa-no-namespace", valPost(valCRBPath, crb(view, map[string]any{"kind": "ServiceAccount", "name": "s"}))},
			{"crb-several", valPost(valCRBPath, crb(ref("", "Pod", ""), map[string]any{"kind": "ServiceAccount", "name": ""}, map[string]any{"kind": "x"}))},
		})
		// Update paths: a Role's rules and a binding's roleRef.
		name := f.unique("role-upd")
		f.Same(t, valPost(valRolePath, valObj(valRBACV1, "Role", name, map[string]any{"rules": []any{rule("verbs", v, "apiGroups", g, "resources", r)}})))
		p := valRolePath + "/" + name
		bname := f.unique("rb-upd")
		f.Same(t, valPost(valRBPath, valObj(valRBACV1, "RoleBinding", bname, map[string]any{"roleRef": view, "subjects": []any{user}})))
		bp := valRBPath + "/" + bname
		valCases(t, f, []valCase{
			{"role-put-no-verbs", fidReq{Method: "PUT", Path: p, Body: valObj(valRBACV1, "Role", name, map[string]any{"rules": []any{rule("apiGroups", g, "resources", r)}})}},
			{"role-patch-nonresource", valPatch(p, `{"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`)},
			{"role-apply-no-verbs", valApply(p, valObj(valRBACV1, "Role", name, map[string]any{"rules": []any{rule("apiGroups", g, "resources", r)}}))},
			{"role-dryrun-no-verbs", valPatch(p+"?dryRun=All", `{"rules":[{"apiGroups":[""],"resources":["pods"]}]}`)},
			{"rb-patch-roleref", valPatch(bp, `{"roleRef":{"name":"edit"}}`)},
			{"rb-patch-subject-kind", valPatch(bp, `{"subjects":[{"kind":"Robot","name":"r"}]}`)},
			{"rb-apply-roleref", valApply(bp, valObj(valRBACV1, "RoleBinding", bname, map[string]any{"roleRef": ref("rbac.authorization.k8s.io", "ClusterRole", "edit")}))},
			{"rb-patch-subjects-ok", valPatch(bp, `{"subjects":[{"kind":"Group","name":"g"}]}`)},
		})
	})

	registerFidelity("02-valid/lease", func(t *testing.T, f *fidelity) {
		lease := func(spec map[string]any) string {
			return valObj("coordination.k8s.io/v1", "Lease", f.unique("lease"), map[string]any{"spec": spec})
		}
		valCases(t, f, []valCase{
			{"duration-zero", valPost(valLeasePath, lease(map[string]any{"leaseDurationSeconds": 0}))},
			{"duration-negative", valPost(valLeasePath, lease(map[string]any{"leaseDurationSeconds": -5}))},
			{"transitions-negative", valPost(valLeasePath, lease(map[string]any{"leaseTransitions": -1}))},
			{"both", valPost(valLeasePath, lease(map[string]any{"leaseDurationSeconds": -1, "leaseTransitions": -1}))},
			// CoordinatedLeaderElection is off by default: kube drops these.
			{"strategy-unknown-dropped", valPost(valLeasePath, lease(map[string]any{"strategy": "Bogus"}))},
			{"preferred-holder-dropped", valPost(valLeasePath, lease(map[string]any{"preferredHolder": "x"}))},
			{"ok", valPost(valLeasePath, lease(map[string]any{"holderIdentity": "me", "leaseDurationSeconds": 15, "leaseTransitions": 0}))},
		})
		name := f.unique("lease-upd")
		f.Same(t, valPost(valLeasePath, valObj("coordination.k8s.io/v1", "Lease", name, map[string]any{"spec": map[string]any{"leaseDurationSeconds": 10}})))
		p := valLeasePath + "/" + name
		valCases(t, f, []valCase{
			{"patch-duration-zero", valPatch(p, `{"spec":{"leaseDurationSeconds":0}}`)},
			{"apply-transitions", valApply(p, valObj("coordination.k8s.io/v1", "Lease", name, map[string]any{"spec": map[string]any{"leaseTransitions": -2}}))},
			{"patch-strategy-dropped", valPatch(p, `{"spec":{"strategy":"Bogus"}}`)},
		})
		// The strategy was dropped on both sides.
		h, k := f.Both(t, fidReq{Path: p})
		if strings.Contains(h.Body, "Bogus") || strings.Contains(k.Body, "Bogus") {
			t.Errorf("spec.strategy kept: hub %s, kube %s", h, k)
		}
	})
}
