package hub

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Issue 12 item 6: authorization texts. A denial must read as
// kube-apiserver's RBAC denial (no trailing "deny: Everything is
// forbidden."), access reviews must carry kube's status.reason, and
// kubectl auth can-i (--list) must print what kube prints for the same
// RBAC, for a person and for a service account.

// authzFixture is one namespace on both sides where alice may get and list
// ConfigMaps (so, on the hub, she may see the workspace at all: without any
// binding the hub answers "workspace access not permitted", which kube has
// no equivalent for).
func authzFixture(t *testing.T, f *fidelity) string {
	t.Helper()
	ns := f.unique("authz")
	f.MustBoth(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: %[1]s}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-cm-reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
`, ns))
	return ns
}

// reviewStatus is what a client reads from an access review's answer.
type reviewStatus struct {
	Status struct {
		Allowed         bool   `json:"allowed"`
		Denied          bool   `json:"denied"`
		Reason          string `json:"reason"`
		EvaluationError string `json:"evaluationError"`
	} `json:"status"`
}

// sameReview posts an access review to both sides and compares its status.
//
// reasons lists the status.reason values kube may give when there are
// several: kube's RBAC visits ClusterRoleBindings in no fixed order, so a
// path that two bootstrap roles grant (/version: system:discovery and
// system:public-info-viewer) names either. hubDenies marks a path the hub
// refuses outright (status.denied: true, README), where kube only has no
// opinion.
func (f *fidelity) sameReview(t *testing.T, as, resource, spec string, hubDenies bool, reasons ...string) {
	t.Helper()
	r := fidReq{Method: "POST", Path: "/apis/authorization.k8s.io/v1/" + resource, As: as,
		Body: `{"apiVersion":"authorization.k8s.io/v1","kind":"` + reviewKind(resource) + `","spec":` + spec + `}`}
	hub, kube := f.Same(t, r)
	var hs, ks reviewStatus
	if err := json.Unmarshal([]byte(hub.Body), &hs); err != nil {
		t.Fatalf("hub review: %v: %s", err, hub.Body)
	}
	if err := json.Unmarshal([]byte(kube.Body), &ks); err != nil {
		t.Fatalf("kube review: %v: %s", err, kube.Body)
	}
	if len(reasons) > 0 && slices.Contains(reasons, hs.Status.Reason) && slices.Contains(reasons, ks.Status.Reason) {
		hs.Status.Reason = ks.Status.Reason
	}
	if hubDenies && hs.Status.Denied && !ks.Status.Denied {
		hs.Status.Denied = false
	}
	if hs.Status != ks.Status {
		t.Errorf("%s %s:\n  hub:  %+v\n  kube: %+v", resource, spec, hs.Status, ks.Status)
	}
}

func reviewKind(resource string) string {
	switch resource {
	case "selfsubjectaccessreviews":
		return "SelfSubjectAccessReview"
	case "subjectaccessreviews":
		return "SubjectAccessReview"
	}
	return "SelfSubjectRulesReview"
}

func init() {
	registerFidelity("06-authz/forbidden-texts", func(t *testing.T, f *fidelity) {
		ns := authzFixture(t, f)
		for _, r := range []fidReq{
			{Path: "/api/v1/namespaces/" + ns + "/secrets/x"},                      // get, namespaced
			{Path: "/api/v1/namespaces/" + ns + "/secrets"},                        // list in a namespace
			{Path: "/api/v1/configmaps"},                                           // list across namespaces
			{Path: "/api/v1/namespaces"},                                           // cluster-scoped list
			{Path: "/api/v1/namespaces/" + ns},                                     // cluster-scoped get
			{Path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin"},        // cluster-scoped, named group
			{Method: "DELETE", Path: "/api/v1/namespaces/" + ns + "/configmaps/x"}, // verb she lacks
			{Method: "POST", Path: "/api/v1/namespaces/" + ns + "/serviceaccounts/default/token", // subresource
				Body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
			{Path: "/metrics"},      // nonResourceURL
			{Path: "/logs/x"},       // nonResourceURL nobody may read
			{Path: "/apis/nope.io"}, // discovery is open: 404 on both
		} {
			r.As = "alice"
			f.Same(t, r)
		}
		// Her grant still works, and the same request as the admin.
		f.Same(t, fidReq{Path: "/api/v1/namespaces/" + ns + "/configmaps", As: "alice"})
		h, _ := f.SameKubectl(t, nil, "alice", "get", "secrets", "-n", ns)
		if strings.Contains(h, "Everything is forbidden") {
			t.Errorf("hub: %s", h)
		}
	})

	registerFidelity("06-authz/access-reviews", func(t *testing.T, f *fidelity) {
		ns := authzFixture(t, f)
		for _, spec := range []string{
			`{"resourceAttributes":{"namespace":"` + ns + `","verb":"get","resource":"configmaps"}}`,
			`{"resourceAttributes":{"namespace":"` + ns + `","verb":"get","resource":"secrets"}}`,
			`{"resourceAttributes":{"verb":"list","resource":"configmaps"}}`,
			`{"resourceAttributes":{"verb":"get","resource":"namespaces"}}`,
			`{"resourceAttributes":{"namespace":"` + ns + `","verb":"create","resource":"serviceaccounts","subresource":"token"}}`,
			`{"nonResourceAttributes":{"verb":"get","path":"/api"}}`,
			`{"nonResourceAttributes":{"verb":"get","path":"/openapi/v3"}}`,
			`{"resourceAttributes":{"verb":"create","group":"authorization.k8s.io","resource":"selfsubjectrulesreviews"}}`,
			`{"resourceAttributes":{"verb":"create","group":"authentication.k8s.io","resource":"selfsubjectreviews"}}`,
		} {
			f.sameReview(t, "alice", "selfsubjectaccessreviews", spec, false)
			full := strings.Replace(spec, "{", `{"user":"alice","groups":["system:authenticated"],`, 1)
			f.sameReview(t, "", "subjectaccessreviews", full, false)
		}
		// Without system:authenticated nothing is granted, as upstream.
		f.sameReview(t, "", "subjectaccessreviews", `{"user":"alice","nonResourceAttributes":{"verb":"get","path":"/api"}}`, false)
		for _, p := range []string{"/version", "/healthz"} {
			spec := `{"nonResourceAttributes":{"verb":"get","path":"` + p + `"}}`
			f.sameReview(t, "alice", "selfsubjectaccessreviews", spec, false,
				`RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`,
				`RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:authenticated"`)
		}
		// /metrics is about the hub process: refused outright there.
		f.sameReview(t, "alice", "selfsubjectaccessreviews", `{"nonResourceAttributes":{"verb":"get","path":"/metrics"}}`, true)
	})

	registerFidelity("06-authz/can-i", func(t *testing.T, f *fidelity) {
		ns := authzFixture(t, f)
		for _, args := range [][]string{
			{"get", "pods"},
			{"get", "pods", "-n", ns},
			{"get", "configmaps", "-n", ns},
			{"list", "configmaps", "-A"},
			{"delete", "configmaps", "-n", ns},
			{"create", "selfsubjectaccessreviews"},
			{"get", "/metrics"},
			{"get", "/api"},
		} {
			f.SameKubectl(t, noUnservedWarning, "alice", append([]string{"auth", "can-i"}, args...)...)
		}
		f.SameKubectl(t, nil, "alice", "auth", "can-i", "--list", "-n", ns)
		f.SameKubectl(t, nil, "alice", "auth", "can-i", "--list", "-n", "default")
	})

	registerFidelity("06-authz/can-i-list-serviceaccount", func(t *testing.T, f *fidelity) {
		ns := authzFixture(t, f)
		f.MustBoth(t, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: ci, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ci-cm-reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {kind: ServiceAccount, name: ci, namespace: %[1]s}
`, ns))
		hubTok, err := f.HubKubectl("", "create", "token", "ci", "-n", ns)
		if err != nil {
			t.Fatalf("hub create token: %v: %s", err, hubTok)
		}
		kubeTok, err := f.KubeKubectl("", "create", "token", "ci", "-n", ns)
		if err != nil {
			t.Fatalf("kube create token: %v: %s", err, kubeTok)
		}
		for _, args := range [][]string{
			{"auth", "can-i", "--list", "-n", ns},
			{"auth", "can-i", "--list", "-n", "default"},
			{"auth", "can-i", "get", "configmaps", "-n", ns},
			{"auth", "can-i", "get", "secrets", "-n", ns},
			{"get", "secrets", "-n", ns},
		} {
			h, he := f.HubKubectl("", append([]string{"--token", hubTok}, args...)...)
			k, ke := f.KubeKubectl("", append([]string{"--token", kubeTok}, args...)...)
			h, k = unservedGrants(h), unservedGrants(k)
			if h != k || (he == nil) != (ke == nil) {
				t.Errorf("kubectl %s:\n  hub (err=%v):\n%s\n  kube (err=%v):\n%s", strings.Join(args, " "), he, h, ke, k)
			}
		}
	})
}

// noUnservedWarning drops kubectl's warning about a resource type the
// server does not serve (the hub serves no pods; kube-apiserver does), so
// that the answers themselves compare.
func noUnservedWarning(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "Warning: the server doesn't have a resource type") || line == "" {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// unservedGrants drops, from kubectl auth can-i --list, kube's bootstrap
// grants to service accounts for what the hub does not serve (issuer
// discovery documents, ClusterTrustBundles: README), and the column
// padding that their width changes.
func unservedGrants(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "/.well-known/openid-configuration") || strings.Contains(line, "/openid/v1/jwks") ||
			strings.HasPrefix(line, "clustertrustbundles.certificates.k8s.io") {
			continue
		}
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return strings.Join(out, "\n")
}
