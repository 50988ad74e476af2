package core_test

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

func (e *env) pod(t *testing.T, ns, name string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
	if _, err := e.admin.CoreV1().Pods(ns).Create(testCtx(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
}

func podNames(t *testing.T, cs kubernetes.Interface) ([]string, error) {
	t.Helper()
	list, err := cs.CoreV1().Pods("").List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out, nil
}

// TestCreateIfMissing is the 403→404 table: only a GET of one named object
// in a namespace that an authoritative lookup finds missing becomes 404.
func TestCreateIfMissing(t *testing.T) {
	e := startEnv(t)
	wind := e.tenant(t, "wind", "alice")
	solar := e.tenant(t, "solar", "bob")
	e.namespace(t, "wind-a", wind, false, "alice")
	e.namespace(t, "solar-a", solar, false, "bob")
	f := e.startFilter(t, core.Options{RequireCapsuleUser: true})
	for _, c := range []struct {
		name, method, path string
		code               int
		message            string
	}{
		{"named configmap, namespace missing", "GET", "/api/v1/namespaces/nope/configmaps/cm", 404, `configmaps \"cm\" not found`},
		{"named deployment, namespace missing", "GET", "/apis/apps/v1/namespaces/nope/deployments/d", 404, `deployments.apps \"d\" not found`},
		{"named secret in bob's existing namespace", "GET", "/api/v1/namespaces/solar-a/secrets/s", 403, "forbidden"},
		{"collection, namespace missing", "GET", "/api/v1/namespaces/nope/configmaps", 403, "forbidden"},
		{"subresource, namespace missing", "GET", "/api/v1/namespaces/nope/pods/p/log", 403, "forbidden"},
		{"watch, namespace missing", "GET", "/api/v1/watch/namespaces/nope/configmaps/cm", 403, "forbidden"},
		{"watch param, namespace missing", "GET", "/api/v1/namespaces/nope/configmaps?watch=true&fieldSelector=metadata.name%3Dcm", 403, "forbidden"},
		{"system namespace kube-*", "GET", "/api/v1/namespaces/kube-nope/configmaps/cm", 403, "forbidden"},
		{"default namespace", "GET", "/api/v1/namespaces/default/configmaps/cm", 403, "forbidden"},
		{"delete, namespace missing", "DELETE", "/api/v1/namespaces/nope/configmaps/cm", 403, "forbidden"},
		{"own namespace, native 404", "GET", "/api/v1/namespaces/wind-a/configmaps/cm", 404, `configmaps \"cm\" not found`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := f.do(t, "alice", c.method, c.path, "", nil)
			if code != c.code || !strings.Contains(body, c.message) || !strings.Contains(body, `"kind":"Status"`) {
				t.Fatalf("%s %s: %d %s, want %d containing %s", c.method, c.path, code, body, c.code, c.message)
			}
			if c.code == 404 && !strings.Contains(body, `"reason":"NotFound"`) {
				t.Fatalf("404 without reason NotFound: %s", body)
			}
		})
	}
	t.Run("details name the group and plural", func(t *testing.T) {
		_, body := f.do(t, "alice", "GET", "/apis/apps/v1/namespaces/nope/deployments/d", "", nil)
		if !strings.Contains(body, `"group":"apps"`) || !strings.Contains(body, `"kind":"deployments"`) || !strings.Contains(body, `"name":"d"`) {
			t.Fatalf("details: %s", body)
		}
	})
}

// TestReflection: with --enable-reflector, bob sees exactly the namespace
// a RoleBinding reflects to him, and a labelled RoleBinding whose role
// allows listing pods makes "get pods -A" return exactly the pods of that
// tenant's namespaces. ProxyAllNamespaced filters -A lists to the caller's
// tenants.
func TestReflection(t *testing.T) {
	e := startEnv(t)
	wind := e.tenant(t, "wind", "alice")
	solar := e.tenant(t, "solar", "bob")
	e.namespace(t, "wind-a", wind, false, "alice")
	e.namespace(t, "wind-b", wind, false, "alice")
	e.namespace(t, "solar-a", solar, false, "bob")
	e.namespace(t, "shared", nil, false)
	e.namespace(t, "other", nil, false)
	for _, p := range []string{"wind-a/p1", "wind-b/p2", "solar-a/p3", "shared/p4", "other/p5"} {
		ns, name, _ := strings.Cut(p, "/")
		e.pod(t, ns, name)
	}
	bobSubj := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "bob"}
	// Namespace reflection: any RoleBinding naming bob.
	e.roleBinding(t, "shared", "bob-reader", "pod-reader", nil, bobSubj)

	f := e.startFilter(t, core.Options{RequireCapsuleUser: true, EnableReflector: true})
	bob := f.clientset(t, "bob", capsuleGroup)
	t.Run("namespace reflection", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			got, err := nsNames(t, bob, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if want := []string{"shared", "solar-a"}; !reflect.DeepEqual(got, want) {
				return fmt.Errorf("bob sees %v, want %v", got, want)
			}
			return nil
		})
	})
	t.Run("without a labelled binding -A keeps the downstream's 403", func(t *testing.T) {
		if _, err := podNames(t, bob); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Fatalf("bob pods -A: %v", err)
		}
	})
	t.Run("labelled binding reflects -A lists to the tenant's namespaces", func(t *testing.T) {
		e.roleBinding(t, "wind-a", "bob-reflected", "pod-reader", map[string]string{core.ReflectionLabel: "true"}, bobSubj)
		eventually(t, time.Minute, func() error {
			got, err := podNames(t, bob)
			if err != nil {
				return err
			}
			if want := []string{"wind-a/p1", "wind-b/p2"}; !reflect.DeepEqual(got, want) {
				return fmt.Errorf("bob pods -A: %v, want %v", got, want)
			}
			return nil
		})
		code, body := f.do(t, "bob", "GET", "/api/v1/pods", "", tableAccept)
		if code != http.StatusOK || !strings.Contains(body, `"p1"`) || strings.Contains(body, `"p5"`) || strings.Contains(body, `"p3"`) {
			t.Fatalf("bob pods -A as Table: %d %s", code, body)
		}
	})
	t.Run("a reflected -A watch passes only the covered namespaces' events", func(t *testing.T) {
		go func() {
			time.Sleep(time.Second)
			e.pod(t, "other", "late-other")
			e.pod(t, "wind-b", "late-wind")
		}()
		code, body := f.do(t, "bob", "GET", "/api/v1/pods?watch=1&timeoutSeconds=6", "", nil)
		if code != http.StatusOK || !strings.Contains(body, `"late-wind"`) || strings.Contains(body, "late-other") || strings.Contains(body, `"p5"`) {
			t.Fatalf("bob pods -A -w: %d %s", code, body)
		}
	})
	t.Run("a Tenant watch passes only owned tenants", func(t *testing.T) {
		code, body := f.do(t, "bob", "GET", "/apis/capsule.clastix.io/v1beta2/tenants?watch=1&timeoutSeconds=2", "", nil)
		if code != http.StatusOK || !strings.Contains(body, `"name":"solar"`) || strings.Contains(body, `"name":"wind"`) {
			t.Fatalf("bob tenants -w: %d %s", code, body)
		}
	})
	t.Run("a binding whose role cannot list is not reflected", func(t *testing.T) {
		code, _ := f.do(t, "bob", "GET", "/api/v1/configmaps", "", nil)
		if code != http.StatusForbidden {
			t.Fatalf("bob configmaps -A: %d", code)
		}
	})
	t.Run("ProxyAllNamespaced", func(t *testing.T) {
		g := e.startFilter(t, core.Options{RequireCapsuleUser: true, FeatureGates: map[string]bool{core.GateProxyAllNamespaced: true}})
		got, err := podNames(t, g.clientset(t, "alice", capsuleGroup))
		if want := []string{"wind-a/p1", "wind-b/late-wind", "wind-b/p2"}; err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("alice pods -A with ProxyAllNamespaced: %v %v, want %v", got, err, want)
		}
	})
}
