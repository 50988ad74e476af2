package tenantfilter

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// TestHarnessFixture checks the shared fixture's premises, straight on the
// kube-apiserver: a tenant user may not list namespaces there (so any list
// the proxy answers is the proxy's doing), owners get tenant-admin in their
// namespaces, and the CapsuleConfiguration's status names the Capsule group.
func TestHarnessFixture(t *testing.T) {
	ctx := testCtx(t)
	tnt := createTenant(t, newTenant(uniq("harness"), userOwner("alice")))
	ns := uniq("harness-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)

	alice, err := kubernetes.NewForConfig(fx.UserConfig(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice listing namespaces directly: %v, want Forbidden", err)
	}
	// kube-apiserver's RBAC authorizer reads bindings from an informer:
	// on a loaded machine the new RoleBinding takes a moment to apply.
	eventually(t, time.Minute, func() error {
		if _, err := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("alice in her tenant namespace: %w", err)
		}
		return nil
	})
	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice in default: %v, want Forbidden", err)
	}

	u, err := adminDynamic().Resource(capsulev1beta2.CapsuleConfigurationsGVR).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	users, _, _ := unstructuredSlice(u.Object, "status", "users")
	if len(users) != 1 || users[0].(map[string]any)["name"] != capsuleGroup {
		t.Fatalf("default CapsuleConfiguration status.users = %v", users)
	}
}
