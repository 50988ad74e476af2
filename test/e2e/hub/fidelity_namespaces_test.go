package hub

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 12 item 3: namespaces as kube-apiserver serves them. The kube side
// runs no namespace controller, so a deleted namespace stays Terminating
// there; where the hub's controller makes the two differ (content removal,
// the namespace going away) namespaces_test.go checks the hub alone.

func decodeNS(t *testing.T, side string, a fidAnswer) *corev1.Namespace {
	t.Helper()
	var ns corev1.Namespace
	if a.Code != 200 && a.Code != 201 {
		t.Fatalf("%s: %s", side, a)
	}
	if err := json.Unmarshal([]byte(a.Body), &ns); err != nil {
		t.Fatalf("%s: %v", side, err)
	}
	return &ns
}

// sameNS checks what the server owns in a namespace on both sides: the
// name label, spec.finalizers and the phase.
func (f *fidelity) sameNS(t *testing.T, r fidReq) (hub, kube *corev1.Namespace) {
	t.Helper()
	h, k := f.Same(t, r)
	if h.Code >= 300 {
		return nil, nil
	}
	hub, kube = decodeNS(t, "hub", h), decodeNS(t, "kube", k)
	type owned struct {
		Label      string
		Finalizers []corev1.FinalizerName
		Phase      corev1.NamespacePhase
		Deleting   bool
	}
	own := func(ns *corev1.Namespace) owned {
		return owned{ns.Labels[corev1.LabelMetadataName], ns.Spec.Finalizers, ns.Status.Phase, ns.DeletionTimestamp != nil}
	}
	if !reflect.DeepEqual(own(hub), own(kube)) {
		t.Errorf("%s %s:\n  hub:  %+v\n  kube: %+v", r.Method, r.Path, own(hub), own(kube))
	}
	return hub, kube
}

// nsBody is a Namespace in JSON with labels, spec.finalizers and phase.
func nsBody(name, label string, finalizers []string, phase string) string {
	b, _ := json.Marshal(map[string]interface{}{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": name, "labels": map[string]string{corev1.LabelMetadataName: label}},
		"spec":     map[string]interface{}{"finalizers": finalizers},
		"status":   map[string]interface{}{"phase": phase},
	})
	return string(b)
}

func init() {
	registerFidelity("03-ns/create-update", func(t *testing.T, f *fidelity) {
		name := f.unique("ns")
		base := "/api/v1/namespaces"
		// Create: label = name, spec.finalizers [kubernetes], Active,
		// whatever the client sent.
		f.sameNS(t, fidReq{Method: "POST", Path: base, Body: nsBody(name, "other", nil, "Terminating")})
		// The main resource changes neither the label nor spec.finalizers
		// nor status.
		f.sameNS(t, fidReq{Method: "PUT", Path: base + "/" + name, Body: nsBody(name, "changed", []string{}, "Terminating")})
		f.sameNS(t, fidReq{Method: "PATCH", Path: base + "/" + name,
			Body: `{"metadata":{"labels":{"kubernetes.io/metadata.name":null}},"spec":{"finalizers":null}}`})
		f.sameNS(t, fidReq{Method: "PATCH", Path: base + "/" + name + "?fieldManager=fid", Ctype: "application/apply-patch+yaml",
			Body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"},"spec":{"finalizers":["example.com/x"]}}`,
		})
		// status: only status; an Active namespace cannot say Terminating.
		f.sameNS(t, fidReq{Method: "PUT", Path: base + "/" + name + "/status", Body: nsBody(name, name, []string{}, "Active")})
		f.Same(t, fidReq{Method: "PUT", Path: base + "/" + name + "/status", Body: nsBody(name, name, nil, "Terminating")})
		f.sameNS(t, fidReq{Path: base + "/" + name + "/status"})
		// finalize: only spec.finalizers, update only.
		f.Same(t, fidReq{Method: "PUT", Path: base + "/" + name + "/finalize", Body: nsBody(name, name, []string{"bad"}, "Active")})
		f.Same(t, fidReq{Method: "PATCH", Path: base + "/" + name + "/finalize", Body: `{"spec":{"finalizers":[]}}`})
		f.Same(t, fidReq{Path: base + "/" + name + "/finalize"})
		f.sameNS(t, fidReq{Method: "PUT", Path: base + "/" + name + "/finalize", Body: nsBody(name, name, []string{"example.com/y"}, "Terminating")})
		f.sameNS(t, fidReq{Path: base + "/" + name})
		// No deletecollection of namespaces.
		f.Same(t, fidReq{Method: "DELETE", Path: base})
	})

	registerFidelity("03-ns/discovery", func(t *testing.T, f *fidelity) {
		h, k := f.Same(t, fidReq{Path: "/api/v1"})
		verbs := func(side, body string) map[string][]string {
			var l metav1.APIResourceList
			if err := json.Unmarshal([]byte(body), &l); err != nil {
				t.Fatalf("%s: %v", side, err)
			}
			out := map[string][]string{}
			for _, r := range l.APIResources {
				if r.Name == "namespaces" || strings.HasPrefix(r.Name, "namespaces/") {
					out[r.Name] = r.Verbs
				}
			}
			return out
		}
		if hv, kv := verbs("hub", h.Body), verbs("kube", k.Body); !reflect.DeepEqual(hv, kv) {
			t.Errorf("namespace verbs:\n  hub:  %v\n  kube: %v", hv, kv)
		}
	})

	registerFidelity("03-ns/missing", func(t *testing.T, f *fidelity) {
		missing := f.unique("missing")
		cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`
		sec := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`
		f.Same(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/" + missing + "/configmaps", Body: cm})
		f.Same(t, fidReq{Method: "POST", Path: "/api/v1/namespaces/" + missing + "/secrets", Body: sec})
		f.SameKubectl(t, nil, "", "create", "configmap", "c", "-n", missing)
		f.SameKubectl(t, nil, "", "create", "secret", "generic", "s", "-n", missing, "--from-literal=a=b")

		// A custom resource: the CRD is hub-wide, so it goes to root.
		crd := fidGadgetCRD
		if out, err := f.Hub.applyStdin("root", crd, "apply"); err != nil {
			t.Fatalf("hub CRD: %v\n%s", err, out)
		}
		if out, err := f.applyTo(f.kubecfg, nil, crd); err != nil {
			t.Fatalf("kube CRD: %v\n%s", err, out)
		}
		wait := []string{"wait", "--for=condition=Established", "crd/gadgets.fidns.example.com", "--timeout=60s"}
		if out, err := f.Hub.kubectl("root", wait...); err != nil {
			t.Fatalf("hub: %v %s", err, out)
		}
		if out, err := f.KubeKubectl("", wait...); err != nil {
			t.Fatalf("kube: %v %s", err, out)
		}
		gadget := `{"apiVersion":"fidns.example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`
		eventually(t, 60*time.Second, func() error {
			h, k := f.Both(t, fidReq{Method: "POST", Path: "/apis/fidns.example.com/v1/namespaces/" + missing + "/gadgets", Body: gadget})
			if h.Code != k.Code || h.Reason != k.Reason || h.Message != k.Message {
				return fmt.Errorf("custom resource in a missing namespace:\n  hub:  %s\n  kube: %s", h, k)
			}
			return nil
		})
	})

	registerFidelity("03-ns/terminating", func(t *testing.T, f *fidelity) {
		name := f.unique("term")
		// A client's metadata finalizer keeps the namespace Terminating on
		// the hub too once its controller has removed the content.
		f.MustBoth(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  finalizers: [example.com/hold]\n", name))
		path := "/api/v1/namespaces/" + name
		f.sameNS(t, fidReq{Method: "DELETE", Path: path})
		// Again: the namespace as it is (the hub's controller may have
		// finalized it by now, so only the answer's code compares).
		f.Same(t, fidReq{Method: "DELETE", Path: path})
		for _, r := range []fidReq{
			{Method: "POST", Path: path + "/configmaps", Body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`},
			{Method: "POST", Path: path + "/secrets", Body: `{"apiVersion":"v1","kind":"Secret","metadata":{"generateName":"s-"}}`},
		} {
			h, _ := f.Same(t, r)
			if !strings.Contains(h.Body, string(corev1.NamespaceTerminatingCause)) {
				t.Errorf("hub answer has no %s cause: %s", corev1.NamespaceTerminatingCause, h.Body)
			}
		}
		f.SameKubectl(t, nil, "", "create", "configmap", "c2", "-n", name)
		// A plain update cannot release the hold (spec.finalizers), only
		// the client's own metadata finalizer. Once that is gone the hub
		// deletes the namespace (its controller finalized it); kube, with
		// no controller, keeps it Terminating on spec.finalizers.
		f.Same(t, fidReq{Method: "PATCH", Path: path, Body: `{"spec":{"finalizers":[]}}`})
		_, k := f.Both(t, fidReq{Path: path})
		if ns := decodeNS(t, "kube", k); len(ns.Spec.Finalizers) != 1 {
			t.Errorf("kube: spec.finalizers after a plain patch: %v", ns.Spec.Finalizers)
		}
		eventually(t, 60*time.Second, func() error {
			h := f.OnHub(t, fidReq{Path: path})
			if ns := decodeNS(t, "hub", h); len(ns.Spec.Finalizers) != 0 {
				return fmt.Errorf("hub controller has not finalized %s: %v", name, ns.Spec.Finalizers)
			}
			return nil
		})
		if h := f.OnHub(t, fidReq{Method: "PATCH", Path: path, Body: `{"metadata":{"finalizers":null}}`}); h.Code != 200 {
			t.Fatalf("hub: %s", h)
		}
		eventually(t, 60*time.Second, func() error {
			if h := f.OnHub(t, fidReq{Path: path}); h.Code != 404 {
				return fmt.Errorf("hub namespace still there: %s", h)
			}
			return nil
		})
	})

	registerFidelity("03-ns/rbac-subresources", func(t *testing.T, f *fidelity) {
		name, role := f.unique("nsrbac"), f.unique("ns-updater")
		f.MustBoth(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[2]s}
rules: [{apiGroups: [""], resources: [namespaces], verbs: [get, update, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[2]s}
subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]
`, name, role))
		path := "/api/v1/namespaces/" + name
		eventually(t, 30*time.Second, func() error {
			if h, k := f.Both(t, fidReq{Path: path, As: "alice"}); h.Code != 200 || k.Code != 200 {
				return fmt.Errorf("alice cannot read %s yet: hub %s, kube %s", name, h, k)
			}
			return nil
		})
		// Update on namespaces grants neither subresource. The hub's RBAC
		// denial appends the reason of its last authorizer (": deny:
		// Everything is forbidden.") to kube's message, on every resource:
		// not this item's, so only kube's message must lead the hub's.
		for _, r := range []fidReq{
			{Method: "PUT", Path: path + "/finalize", As: "alice", Body: nsBody(name, name, []string{}, "Active")},
			{Method: "PUT", Path: path + "/status", As: "alice", Body: nsBody(name, name, nil, "Active")},
			{Method: "PATCH", Path: path + "/status", As: "alice", Body: `{"status":{"phase":"Active"}}`},
			{Path: path + "/status", As: "alice"},
		} {
			h, k := f.Both(t, r)
			if h.Code != 403 || h.Code != k.Code || h.Reason != k.Reason || !strings.HasPrefix(h.Message, k.Message) {
				t.Errorf("%s %s as alice:\n  hub:  %s\n  kube: %s", r.Method, r.Path, h, k)
			}
		}
	})
}

// fidGadgetCRD is a namespaced CRD of a group no other check uses.
var fidGadgetCRD = openCRD("fidns.example.com", "gadgets", "Gadget")
