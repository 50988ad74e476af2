package storecap

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The plugin's decisions on a store above its mark (the monitor's state
// comes from TestMonitorHighWaterCompactsAndDefrags; here it is set).
func TestAdmissionAboveHighWater(t *testing.T) {
	m := New(Config{Quota: 100, HighWater: 0.8, Interval: time.Second})
	m.state.Store(&State{Known: true, InUse: 90, Size: 90, High: true})
	a := NewAdmission(m, func(u user.Info) bool { return u.GetName() == "hubadmin" })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
	deleting := cm.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	tenant := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	cms := corev1.SchemeGroupVersion.WithResource("configmaps")
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	for _, tc := range []struct {
		name    string
		op      admission.Operation
		res     schema.GroupVersionResource
		sub     string
		obj     runtime.Object
		old     runtime.Object
		u       user.Info
		dryRun  bool
		refused bool
	}{
		{"tenant create", admission.Create, cms, "", cm, nil, tenant, false, true},
		{"tenant dry-run create", admission.Create, cms, "", cm, nil, tenant, true, true},
		{"tenant update", admission.Update, cms, "", cm, cm, tenant, false, true},
		{"tenant status update", admission.Update, widgets, "status", cm, cm, tenant, false, true},
		{"tenant custom resource create", admission.Create, widgets, "", cm, nil, tenant, false, true},
		{"finalizer removal on a deleting object", admission.Update, cms, "", deleting, deleting, tenant, false, false},
		{"access review", admission.Create, schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}, "", cm, nil, tenant, false, false},
		{"token request", admission.Create, corev1.SchemeGroupVersion.WithResource("serviceaccounts"), "token", cm, nil, tenant, false, false},
		{"hub admin", admission.Create, cms, "", cm, nil, &user.DefaultInfo{Name: "hubadmin"}, false, false},
		{"loopback (system:masters)", admission.Create, cms, "", cm, nil, &user.DefaultInfo{Name: "system:apiserver", Groups: []string{user.SystemPrivilegedGroup}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := admission.NewAttributesRecord(tc.obj, tc.old, schema.GroupVersionKind{}, "default", "c", tc.res, tc.sub, tc.op, nil, tc.dryRun, tc.u)
			err := a.Validate(context.Background(), attrs, nil)
			if tc.refused != (err != nil) {
				t.Fatalf("refused %v, want %v", err, tc.refused)
			}
			if err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the hub's store is nearly full")) {
				t.Fatalf("refusal %v: want 403 naming the cause", err)
			}
		})
	}
}

// Near the mark, admitted writes count until a poll has seen them; a
// dry-run does not count.
func TestAdmissionEstimateBetweenPolls(t *testing.T) {
	m := New(Config{Quota: 1000, HighWater: 0.8, Interval: time.Second})
	m.state.Store(&State{Known: true, InUse: 500, Size: 500})
	if !m.careful() {
		t.Fatal("not careful above half the mark")
	}
	if !m.admit(200, false) || !m.admit(200, false) {
		t.Fatal("dry runs refused")
	}
	if !m.admit(200, true) {
		t.Fatal("first write refused")
	}
	if m.admit(200, true) {
		t.Fatal("a write past the mark (500 + 200 + 200 >= 800) admitted")
	}
}

// A fragmented file near its mark (bytes in use low after compaction,
// no defragmentation allowed) is what etcd's quota counts: between two
// polls admitted bytes count against the file, so one poll's burst
// cannot carry it past the quota.
func TestAdmissionFileMarkBetweenPolls(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inUse, size int64
		writes      []int64
		admitted    int
	}{
		{"compact file far from its mark", 100, 300, []int64{50, 50, 50}, 3},
		{"fragmented file near its mark", 100, 850, []int64{30, 10, 20}, 2},
		{"fragmented file at its mark", 100, 900, []int64{1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Quota 1000, mark 800, file mark 900.
			m := New(Config{Quota: 1000, HighWater: 0.8, Interval: time.Second})
			m.state.Store(&State{Known: true, InUse: tc.inUse, Size: tc.size})
			if m.careful() != (tc.size >= 400) {
				t.Fatalf("careful %v at file %d", m.careful(), tc.size)
			}
			n := 0
			for _, w := range tc.writes {
				if m.admit(w, true) {
					n++
				}
			}
			if n != tc.admitted {
				t.Fatalf("admitted %d of %v, want %d", n, tc.writes, tc.admitted)
			}
		})
	}
}
