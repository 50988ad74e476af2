package core_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
	"github.com/wharfhub/wharf/providers/tenantfilter/crds"
	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// These tests run the core in-process against the real kube-apiserver
// fixture. A minimal test front end takes the caller from X-Test-User and
// X-Test-Group (the real fronts authenticate; that is not under test here)
// and the client's own Impersonate-* headers are left on the request, so
// the tests also prove the core strips them.

const capsuleGroup = "projectcapsule.dev"

type env struct {
	fx    *kube.Cluster
	admin kubernetes.Interface
	dyn   dynamic.Interface
}

func startEnv(t *testing.T) *env {
	t.Helper()
	e := startBareEnv(t)
	e.capsuleConfiguration(t, capsuleGroup)
	return e
}

// startBareEnv is the fixture with our CRDs and RBAC but no
// CapsuleConfiguration.
func startBareEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the kube fixture")
	}
	fx := kube.Start(t, kube.Options{})
	ctx := testCtx(t)
	if err := crds.Apply(ctx, fx.Config()); err != nil {
		t.Fatalf("apply CRDs: %v", err)
	}
	fx.ApplyYAML(t, baseRBAC)
	e := &env{fx: fx, admin: fx.Clientset(t)}
	d, err := dynamic.NewForConfig(fx.Config())
	if err != nil {
		t.Fatal(err)
	}
	e.dyn = d
	return e
}

// baseRBAC: Capsule's namespace provisioner for tenant users, and the
// admin role owners get in their namespaces.
const baseRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: capsule-namespace-provisioner}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: capsule-namespace-provisioner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: capsule-namespace-provisioner}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: projectcapsule.dev}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tenant-admin}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pod-reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ns-reader}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ns-reader-ops}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ns-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: keep-ops}
`

func (e *env) capsuleConfiguration(t *testing.T, group string) {
	t.Helper()
	res := e.dyn.Resource(capsulev1beta2.CapsuleConfigurationsGVR)
	users := []any{map[string]any{"kind": "Group", "name": group}}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capsulev1beta2.SchemeGroupVersion.String(), "kind": "CapsuleConfiguration",
		"metadata": map[string]any{"name": "default"},
		"spec":     map[string]any{"users": users},
	}}
	created, err := res.Create(testCtx(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CapsuleConfiguration: %v", err)
	}
	_ = unstructured.SetNestedSlice(created.Object, users, "status", "users")
	if _, err := res.UpdateStatus(testCtx(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("CapsuleConfiguration status: %v", err)
	}
}

func (e *env) tenant(t *testing.T, name string, owners ...string) *unstructured.Unstructured {
	t.Helper()
	var os []any
	for _, o := range owners {
		os = append(os, map[string]any{"kind": "User", "name": o})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capsulev1beta2.SchemeGroupVersion.String(), "kind": "Tenant",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"owners": os},
	}}
	out, err := e.dyn.Resource(capsulev1beta2.TenantsGVR).Create(testCtx(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	return out
}

// namespace creates a namespace of tenant (by label, or by ownerReference
// when byRef) and binds the owners to tenant-admin in it, as Capsule does.
func (e *env) namespace(t *testing.T, name string, tenant *unstructured.Unstructured, byRef bool, owners ...string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if tenant != nil {
		if byRef {
			yes := true
			ns.OwnerReferences = []metav1.OwnerReference{{APIVersion: capsulev1beta2.SchemeGroupVersion.String(), Kind: "Tenant",
				Name: tenant.GetName(), UID: tenant.GetUID(), Controller: &yes}}
		} else {
			ns.Labels[capsulev1beta2.TenantLabel] = tenant.GetName()
		}
	}
	if _, err := e.admin.CoreV1().Namespaces().Create(testCtx(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	e.fx.EnsureServiceAccount(t, name, "default")
	if len(owners) > 0 {
		var subj []rbacv1.Subject
		for _, o := range owners {
			subj = append(subj, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: o})
		}
		e.roleBinding(t, name, "owners", "tenant-admin", nil, subj...)
	}
}

func (e *env) roleBinding(t *testing.T, ns, name, role string, labels map[string]string, subj ...rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subj,
	}
	if _, err := e.admin.RbacV1().RoleBindings(ns).Create(testCtx(t), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create rolebinding %s/%s: %v", ns, name, err)
	}
}

// filter is a running core behind a test front end.
type filter struct {
	core *core.Core
	srv  *httptest.Server
	// front is srv's handler, for tests that serve it another way.
	front http.Handler
}

func (e *env) startFilter(t *testing.T, opts core.Options) *filter {
	t.Helper()
	return e.startFilterWith(t, e.fx.Config(), opts)
}

// startFilterWith starts a filter whose downstream credential is cfg.
func (e *env) startFilterWith(t *testing.T, cfg *rest.Config, opts core.Options) *filter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := core.New(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
	defer scancel()
	if !c.WaitForSync(sctx) {
		t.Fatal("caches did not sync")
	}
	if !c.Ready() {
		t.Fatal("not Ready after WaitForSync")
	}
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-Test-User")
		if user == "" {
			c.ServeHTTP(w, r) // no caller: the core must answer 401
			return
		}
		caller := core.Caller{User: user, Groups: r.Header.Values("X-Test-Group")}
		c.ServeHTTP(w, r.WithContext(core.WithCaller(r.Context(), caller)))
	})
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	return &filter{core: c, srv: srv, front: front}
}

// config reaches the filter as user with groups.
func (f *filter) config(user string, groups ...string) *rest.Config {
	return &rest.Config{Host: f.srv.URL, QPS: -1,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return headerRT{rt: rt, user: user, groups: groups}
		}}
}

func (f *filter) clientset(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(f.config(user, groups...))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// do sends one raw request as user (member of the Capsule group).
func (f *filter) do(t *testing.T, user, method, path, body string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if user != "" {
		req.Header.Set("X-Test-User", user)
		req.Header.Add("X-Test-Group", capsuleGroup)
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

type headerRT struct {
	rt     http.RoundTripper
	user   string
	groups []string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-User", h.user)
	for _, g := range h.groups {
		r.Header.Add("X-Test-Group", g)
	}
	return h.rt.RoundTrip(r)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually is testutil.Eventually under the name this package's tests
// call.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, cond)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func (f *filter) dynamic(t *testing.T, user string, groups ...string) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(f.config(user, groups...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func toU(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

// callCounter counts the provider's downstream requests matching a path
// (watches excluded: informers keep theirs open).
type callCounter struct {
	mu    sync.Mutex
	path  string
	calls int
}

func (c *callCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == c.path && r.URL.Query().Get("watch") == "" {
			c.mu.Lock()
			c.calls++
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *callCounter) reset() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.calls
	c.calls = 0
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
