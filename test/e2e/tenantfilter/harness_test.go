package tenantfilter

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/crds"
	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// Groups the test users carry. capsuleGroup is the CapsuleConfiguration's
// user group (Capsule's own default, renamed by newer Capsule releases).
const (
	capsuleGroup  = "projectcapsule.dev"
	tenantGroupX  = "tenant-group-x" // owns tenants as a Group owner
	ignoredGroup  = "ignored-admins" // for --ignored-user-group
	reviewerGroup = "impersonators"  // may impersonate (SubjectAccessReview allows)
)

// testUsers are every static-token identity the package's tests use;
// kube-apiserver reads its token file once, so all are minted at start.
// Make new scenarios pick from here (or add here): a user's token cannot be
// added later.
var testUsers = []kube.User{
	{Name: "alice", Groups: []string{capsuleGroup}},
	{Name: "bob", Groups: []string{capsuleGroup}},
	{Name: "carol", Groups: []string{capsuleGroup}},
	{Name: "dave", Groups: []string{capsuleGroup}},
	{Name: "erin", Groups: []string{capsuleGroup, tenantGroupX}},
	{Name: "frank", Groups: []string{capsuleGroup, tenantGroupX}},
	{Name: "grace", Groups: []string{capsuleGroup}},
	{Name: "heidi", Groups: []string{capsuleGroup}},
	// Not tenant users: no Capsule group.
	{Name: "mallory"},
	{Name: "oscar", Groups: []string{"plain-group"}},
	{Name: "trent", Groups: []string{reviewerGroup}},
	// Bypass filtering by name (--ignored-username) or group.
	{Name: "ignored-user", Groups: []string{capsuleGroup}},
	{Name: "ignored-member", Groups: []string{capsuleGroup, ignoredGroup}},
	// A tenant-owning ServiceAccount, as a static token for its username.
	{Name: "system:serviceaccount:sa-home:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:sa-home"}},
	// A user with many groups (impersonation group filtering).
	{Name: "groupie", Groups: manyGroups(200)},
}

// Fresh tenant users, handed out once per package run by freshUser: the
// fixture is shared, so a scenario that asserts "exactly these namespaces"
// for alice would see other tests' tenants of alice; a fresh user owns
// only what its test gives it.
const freshUsers = 40

func init() {
	for i := range freshUsers {
		testUsers = append(testUsers, kube.User{Name: fmt.Sprintf("user-%02d", i), Groups: []string{capsuleGroup}})
	}
}

var freshSeq atomic.Int64

// freshUser returns a tenant user (in the Capsule group) no other test of
// this package run has used.
func freshUser(t testing.TB) string {
	t.Helper()
	n := freshSeq.Add(1) - 1
	if n >= freshUsers {
		t.Fatalf("out of fresh users: raise freshUsers in harness_test.go")
	}
	return fmt.Sprintf("user-%02d", n)
}

func manyGroups(n int) []string {
	g := []string{capsuleGroup}
	for i := range n - 1 {
		g = append(g, fmt.Sprintf("team-%03d", i))
	}
	return g
}

// fx is the package's kube fixture, started by TestMain.
var fx *kube.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test here needs the fixture; -short means none of them.
		fmt.Println("tenantfilter e2e: skipped with -short")
		os.Exit(0)
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) (code int) {
	tb := &mainTB{}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(mainFatal)
			if !ok {
				panic(r)
			}
			fmt.Fprintf(os.Stderr, "tenantfilter e2e: fixture: %s\n", f.msg)
			code = 1
		}
		if code != 0 {
			tb.setFailed()
		}
		tb.runCleanups()
	}()
	fx = kube.Start(tb, kube.Options{Users: testUsers})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := crds.Apply(ctx, fx.Config()); err != nil {
		tb.Fatalf("apply CRDs: %v", err)
	}
	fx.ApplyYAML(tb, baseManifest)
	if err := ensureCapsuleConfiguration(ctx, capsulev1beta2.DefaultCapsuleConfigurationName,
		[]capsulev1beta2.UserSpec{{Kind: capsulev1beta2.GroupOwner, Name: capsuleGroup}}); err != nil {
		tb.Fatalf("%v", err)
	}
	return m.Run()
}

// baseManifest is what a Capsule install gives tenant users: namespace
// creation for the Capsule group (capsule-namespace-provisioner) and the
// admin role Capsule binds owners to in their namespaces. The fixture runs
// no controller-manager, so the aggregated "admin" ClusterRole stays empty;
// tenant-admin replaces it.
const baseManifest = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: capsule-namespace-provisioner}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [create]
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
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: test-impersonator}
rules:
- apiGroups: [""]
  resources: [users, groups, serviceaccounts]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-impersonator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-impersonator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: impersonators}
`

// ensureCapsuleConfiguration creates or updates a CapsuleConfiguration and
// writes its status.users as Capsule would, so the filter can read it even
// when a test runs the proxy with --status-controller=false.
func ensureCapsuleConfiguration(ctx context.Context, name string, users []capsulev1beta2.UserSpec) error {
	dyn := adminDynamic()
	res := dyn.Resource(capsulev1beta2.CapsuleConfigurationsGVR)
	spec := capsulev1beta2.CapsuleConfigurationSpec{Users: users}
	list := []any{}
	for _, u := range spec.MergedUsers() {
		list = append(list, map[string]any{"kind": string(u.Kind), "name": u.Name})
	}
	obj, err := res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": capsulev1beta2.SchemeGroupVersion.String(), "kind": "CapsuleConfiguration",
			"metadata": map[string]any{"name": name},
		}}
		_ = unstructured.SetNestedSlice(obj.Object, list, "spec", "users")
		if obj, err = res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CapsuleConfiguration %s: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("get CapsuleConfiguration %s: %w", name, err)
	} else {
		_ = unstructured.SetNestedSlice(obj.Object, list, "spec", "users")
		if obj, err = res.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update CapsuleConfiguration %s: %w", name, err)
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, list, "status", "users")
	if _, err := res.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("CapsuleConfiguration %s status: %w", name, err)
	}
	return nil
}

func adminDynamic() dynamic.Interface {
	d, err := dynamic.NewForConfig(fx.Config())
	if err != nil {
		panic(err) // a valid static config never fails here
	}
	return d
}

func adminClientset() kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(fx.Config())
	if err != nil {
		panic(err) // as above
	}
	return cs
}

var uniqSeq atomic.Int64

// uniq returns prefix plus a number unique in this package run, so tests
// sharing the fixture never collide on names.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, uniqSeq.Add(1))
}

// eventually is testutil.Eventually under the name this package's tests
// call.
func eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, cond)
}

// testCtx is a context bounded by a generous per-call timeout and the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
