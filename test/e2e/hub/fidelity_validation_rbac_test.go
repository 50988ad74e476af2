package hub

import (
	"strings"
	"testing"
)

// Issue 12 item 2, continued: RBAC, Lease and the ObjectMeta rules of the
// built-in kinds (finalizer names, labels, annotations, names).

const rbacV1 = "rbac.authorization.k8s.io/v1"
const rolePath = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
const rbPath = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
const crPath = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
const crbPath = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
const leasePath = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

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
			return obj(rbacV1, "Role", f.unique("role"), map[string]any{"rules": rules})
		}
		cr := func(extra map[string]any) string { return obj(rbacV1, "ClusterRole", f.unique("cr"), extra) }
		ref := func(apiGroup, kind, name string) map[string]any {
			return map[string]any{"apiGroup": apiGroup, "kind": kind, "name": name}
		}
		user := map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}
		rb := func(roleRef map[string]any, subjects ...map[string]any) string {
			return obj(rbacV1, "RoleBinding", f.unique("rb"), map[string]any{"roleRef": roleRef, "subjects": subjects})
		}
		crb := func(roleRef map[string]any, subjects ...map[string]any) string {
			return obj(rbacV1, "ClusterRoleBinding", f.unique("crb"), map[string]any{"roleRef": roleRef, "subjects": subjects})
		}
		view := ref("rbac.authorization.k8s.io", "ClusterRole", "view")
		runCases(t, f, []vcase{
			{"role-no-verbs", post(rolePath, role(rule("apiGroups", g, "resources", r)))},
			{"role-no-apigroups", post(rolePath, role(rule("verbs", v, "resources", r)))},
			{"role-no-resources", post(rolePath, role(rule("verbs", v, "apiGroups", g)))},
			{"role-empty-rule", post(rolePath, role(rule()))},
			{"role-nonresourceurls", post(rolePath, role(rule("verbs", v, "nonResourceURLs", []string{"/healthz"})))},
			{"role-second-rule-bad", post(rolePath, role(rule("verbs", v, "apiGroups", g, "resources", r), rule("verbs", v)))},
			{"role-ok", post(rolePath, role(rule("verbs", v, "apiGroups", g, "resources", r)))},
			{"cr-nonresource-ok", post(crPath, cr(map[string]any{"rules": []any{rule("verbs", v, "nonResourceURLs", []string{"/healthz"})}}))},
			{"cr-nonresource-and-resources", post(crPath, cr(map[string]any{"rules": []any{rule("verbs", v, "nonResourceURLs", []string{"/x"}, "resources", r)}}))},
			{"cr-nonresource-and-names", post(crPath, cr(map[string]any{"rules": []any{rule("verbs", v, "nonResourceURLs", []string{"/x"}, "resourceNames", []string{"a"})}}))},
			{"cr-aggregation-empty", post(crPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{}}}))},
			{"cr-aggregation-bad-selector", post(crPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Bogus"}}}}}}))},
			{"cr-aggregation-bad-label", post(crPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"a b": "c"}}}}}))},
			{"cr-aggregation-and-rules-ok", post(crPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"x": "y"}}}}, "rules": []any{rule("verbs", v, "apiGroups", g, "resources", r)}}))},
			{"cr-aggregation-and-bad-rules", post(crPath, cr(map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"x": "y"}}}}, "rules": []any{rule("apiGroups", g)}}))},
			{"rb-roleref-pod", post(rbPath, rb(ref("rbac.authorization.k8s.io", "Pod", "x"), user))},
			{"rb-roleref-apigroup", post(rbPath, rb(ref("example.com", "Role", "x"), user))},
			{"rb-roleref-apigroup-defaulted", post(rbPath, rb(ref("", "ClusterRole", "view"), user))},
			{"rb-roleref-no-name", post(rbPath, rb(ref("rbac.authorization.k8s.io", "Role", ""), user))},
			{"rb-roleref-bad-name", post(rbPath, rb(ref("rbac.authorization.k8s.io", "Role", "a/b"), user))},
			{"rb-subject-no-name", post(rbPath, rb(view, map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": ""}))},
			{"rb-subject-kind", post(rbPath, rb(view, map[string]any{"kind": "Robot", "name": "r"}))},
			{"rb-subject-user-apigroup-defaulted", post(rbPath, rb(view, map[string]any{"kind": "Group", "name": "g"}))},
			{"rb-subject-user-bad-apigroup", post(rbPath, rb(view, map[string]any{"kind": "User", "apiGroup": "v1", "name": "bob"}))},
			{"rb-subject-sa-apigroup", post(rbPath, rb(view, map[string]any{"kind": "ServiceAccount", "apiGroup": "rbac.authorization.k8s.io", "name": "s"}))},
			{"rb-subject-sa-bad-name", post(rbPath, rb(view, map[string]any{"kind": "ServiceAccount", "name": "Bad_Name"}))},
			{"rb-subject-sa-no-namespace-ok", post(rbPath, rb(view, map[string]any{"kind": "ServiceAccount", "name": "s"}))},
			{"crb-roleref-role", post(crbPath, crb(ref("rbac.authorization.k8s.io", "Role", "x"), user))},
			{"crb-subject-sa-no-namespace", post(crbPath, crb(view, map[string]any{"kind": "ServiceAccount", "name": "s"}))},
			{"crb-several", post(crbPath, crb(ref("", "Pod", ""), map[string]any{"kind": "ServiceAccount", "name": ""}, map[string]any{"kind": "x"}))},
		})
		// Update paths: a Role's rules and a binding's roleRef.
		name := f.unique("role-upd")
		f.Same(t, post(rolePath, obj(rbacV1, "Role", name, map[string]any{"rules": []any{rule("verbs", v, "apiGroups", g, "resources", r)}})))
		p := rolePath + "/" + name
		bname := f.unique("rb-upd")
		f.Same(t, post(rbPath, obj(rbacV1, "RoleBinding", bname, map[string]any{"roleRef": view, "subjects": []any{user}})))
		bp := rbPath + "/" + bname
		runCases(t, f, []vcase{
			{"role-put-no-verbs", fidReq{Method: "PUT", Path: p, Body: obj(rbacV1, "Role", name, map[string]any{"rules": []any{rule("apiGroups", g, "resources", r)}})}},
			{"role-patch-nonresource", mergePatch(p, `{"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`)},
			{"role-apply-no-verbs", apply(p, obj(rbacV1, "Role", name, map[string]any{"rules": []any{rule("apiGroups", g, "resources", r)}}))},
			{"role-dryrun-no-verbs", mergePatch(p+"?dryRun=All", `{"rules":[{"apiGroups":[""],"resources":["pods"]}]}`)},
			{"rb-patch-roleref", mergePatch(bp, `{"roleRef":{"name":"edit"}}`)},
			{"rb-patch-subject-kind", mergePatch(bp, `{"subjects":[{"kind":"Robot","name":"r"}]}`)},
			{"rb-apply-roleref", apply(bp, obj(rbacV1, "RoleBinding", bname, map[string]any{"roleRef": ref("rbac.authorization.k8s.io", "ClusterRole", "edit")}))},
			{"rb-patch-subjects-ok", mergePatch(bp, `{"subjects":[{"kind":"Group","name":"g"}]}`)},
		})
	})

	registerFidelity("02-valid/lease", func(t *testing.T, f *fidelity) {
		lease := func(spec map[string]any) string {
			return obj("coordination.k8s.io/v1", "Lease", f.unique("lease"), map[string]any{"spec": spec})
		}
		runCases(t, f, []vcase{
			{"duration-zero", post(leasePath, lease(map[string]any{"leaseDurationSeconds": 0}))},
			{"duration-negative", post(leasePath, lease(map[string]any{"leaseDurationSeconds": -5}))},
			{"transitions-negative", post(leasePath, lease(map[string]any{"leaseTransitions": -1}))},
			{"both", post(leasePath, lease(map[string]any{"leaseDurationSeconds": -1, "leaseTransitions": -1}))},
			// CoordinatedLeaderElection is off by default: kube drops these.
			{"strategy-unknown-dropped", post(leasePath, lease(map[string]any{"strategy": "Bogus"}))},
			{"preferred-holder-dropped", post(leasePath, lease(map[string]any{"preferredHolder": "x"}))},
			{"ok", post(leasePath, lease(map[string]any{"holderIdentity": "me", "leaseDurationSeconds": 15, "leaseTransitions": 0}))},
		})
		name := f.unique("lease-upd")
		f.Same(t, post(leasePath, obj("coordination.k8s.io/v1", "Lease", name, map[string]any{"spec": map[string]any{"leaseDurationSeconds": 10}})))
		p := leasePath + "/" + name
		runCases(t, f, []vcase{
			{"patch-duration-zero", mergePatch(p, `{"spec":{"leaseDurationSeconds":0}}`)},
			{"apply-transitions", apply(p, obj("coordination.k8s.io/v1", "Lease", name, map[string]any{"spec": map[string]any{"leaseTransitions": -2}}))},
			{"patch-strategy-dropped", mergePatch(p, `{"spec":{"strategy":"Bogus"}}`)},
		})
		// The strategy was dropped on both sides.
		h, k := f.Both(t, fidReq{Path: p})
		if strings.Contains(h.Body, "Bogus") || strings.Contains(k.Body, "Bogus") {
			t.Errorf("spec.strategy kept: hub %s, kube %s", h, k)
		}
	})
}
