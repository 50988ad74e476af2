package core_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// TestTenancyFollowsCapsuleConfiguration: without the CapsuleConfiguration
// tenant-aware features are skipped (alice is forwarded with her own
// identity and the downstream's RBAC answers); once it exists, with its
// status listing her group, she is a tenant user and gets her filtered
// list, without a restart. A user outside the configured users stays
// unfiltered with --require-capsule-user.
func TestTenancyFollowsCapsuleConfiguration(t *testing.T) {
	e := startBareEnv(t)
	wind := e.tenant(t, "wind", "alice")
	e.namespace(t, "wind-a", wind, false, "alice")
	f := e.startFilter(t, core.Options{RequireCapsuleUser: true})
	alice := f.clientset(t, "alice", capsuleGroup)
	if _, err := nsNames(t, alice, metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("without a CapsuleConfiguration alice should get the downstream's 403: %v", err)
	}
	e.capsuleConfiguration(t, capsuleGroup)
	eventually(t, time.Minute, func() error {
		got, err := nsNames(t, alice, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, []string{"wind-a"}) {
			return fmt.Errorf("alice sees %v", got)
		}
		return nil
	})
	// alice without the Capsule group is not a tenant user.
	if _, err := nsNames(t, f.clientset(t, "alice", "other"), metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("alice outside the Capsule users: %v", err)
	}
}
