package workspaces

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/component-base/metrics/testutil"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

const holdFinalizer = "example.com/hold"

// TestCreateReportsReady checks that a new workspace comes back Ready with
// a Ready=True condition, after being stored Initializing.
func TestCreateReportsReady(t *testing.T) {
	f := newFixture(t)
	ws := f.create(t, f.root, "fresh")
	c := meta.FindStatusCondition(ws.Status.Conditions, tenancyv1alpha1.WorkspaceReady)
	if ws.Status.Phase != tenancyv1alpha1.WorkspacePhaseReady || c == nil || c.Status != metav1.ConditionTrue || c.Reason != tenancyv1alpha1.WorkspaceReasonInitialized {
		t.Fatalf("created workspace: phase %q, Ready condition %+v", ws.Status.Phase, c)
	}
	got, err := f.get(t, f.root, "fresh")
	if err != nil || !meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.WorkspaceReady) {
		t.Fatalf("stored workspace: %+v, %v", got, err)
	}
}

// TestDeletionHonoursChildFinalizers deletes a workspace whose child
// Workspace carries a finalizer of some controller. The child's own
// cleanup runs; its object, and so the parent, waits for that finalizer
// within the grace period (on the controller's fake clock), goes as
// soon as the finalizer is removed, and is purged and counted as forced
// once the grace period has passed.
func TestDeletionHonoursChildFinalizers(t *testing.T) {
	const grace = time.Minute
	tests := []struct {
		name     string
		release  bool // the child's controller removes its finalizer in time
		advance  time.Duration
		forced   float64
		wantGone bool
	}{
		{name: "finalizer removed within grace", release: true, wantGone: true},
		{name: "grace period passes", advance: grace + time.Second, forced: 1, wantGone: true},
		{name: "within grace", advance: grace - 10*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.ctrl.DeleteContentFirst(nil, grace)
			ctx := context.Background()
			forcedBefore, _ := testutil.GetCounterMetricValue(forcedObjects.WithLabelValues("workspaces.tenancy.wharf.dev"))
			parent := f.create(t, f.root, "parent")
			pid := cluster.ID(parent.Status.Cluster)
			f.create(t, pid, "held")
			f.create(t, pid, "free")
			f.setFinalizers(t, pid, "held", func(fs []string) []string { return append(fs, holdFinalizer) })
			if _, _, err := f.rest.Delete(in(f.root), "parent", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			pending, err := f.get(t, f.root, "parent")
			if err != nil {
				t.Fatal(err)
			}

			wait, err := f.ctrl.finish(ctx, pending)
			if err != nil || wait <= 0 {
				t.Fatalf("first pass: wait %v, %v; want a wait for the held child", wait, err)
			}
			pending, err = f.get(t, f.root, "parent")
			if err != nil {
				t.Fatalf("parent gone while its child's finalizer holds: %v", err)
			}
			c := meta.FindStatusCondition(pending.Status.Conditions, tenancyv1alpha1.WorkspaceContentDeleted)
			if pending.Status.Phase != tenancyv1alpha1.WorkspacePhaseTerminating || c == nil || c.Reason != tenancyv1alpha1.WorkspaceReasonSomeFinalizersRemain ||
				!strings.Contains(c.Message, holdFinalizer+" in 1 resource instances") {
				t.Fatalf("terminating parent: phase %q, ContentDeleted %+v", pending.Status.Phase, c)
			}
			if meta.IsStatusConditionTrue(pending.Status.Conditions, tenancyv1alpha1.WorkspaceReady) {
				t.Error("terminating parent still Ready")
			}
			// Each child's own key in the queue.
			f.finishChildren(t, pid)
			held, err := f.get(t, pid, "held")
			if err != nil || held.DeletionTimestamp == nil {
				t.Fatalf("held child: %+v, %v; want it pending deletion", held, err)
			}
			if _, err := f.get(t, pid, "free"); err == nil {
				t.Error("child without finalizers not deleted")
			}
			// The child's own cleanup ran (its cluster is empty); only the
			// foreign finalizer holds its object, and so the parent.

			if tt.release {
				f.setFinalizers(t, pid, "held", func(fs []string) []string { return removeString(fs, holdFinalizer) })
			}
			f.clock.SetTime(pending.DeletionTimestamp.Add(tt.advance))
			f.finishChildren(t, pid)
			wait, err = f.ctrl.finish(ctx, pending)
			if err != nil {
				t.Fatal(err)
			}
			_, gerr := f.get(t, f.root, "parent")
			if gone := gerr != nil; gone != tt.wantGone || (wait > 0) == tt.wantGone {
				t.Fatalf("second pass: parent gone %v (want %v), wait %v", gone, tt.wantGone, wait)
			}
			if f.recorded(t, "root:parent") == tt.wantGone {
				t.Errorf("root:parent recorded = %v, want %v", !tt.wantGone, !tt.wantGone)
			}
			if _, err := f.get(t, pid, "held"); (err != nil) != tt.wantGone {
				t.Errorf("held child gone = %v, want %v", err != nil, tt.wantGone)
			}
			forced, _ := testutil.GetCounterMetricValue(forcedObjects.WithLabelValues("workspaces.tenancy.wharf.dev"))
			if forced-forcedBefore != tt.forced {
				t.Errorf("forced objects counted: %v, want %v", forced-forcedBefore, tt.forced)
			}
		})
	}
}

// setFinalizers edits a Workspace's finalizers as a client (a controller
// holding it) would.
func (f *fixture) setFinalizers(t *testing.T, parent cluster.ID, name string, edit func([]string) []string) {
	t.Helper()
	_, _, err := f.rest.Update(in(parent), name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		ws := old.(*tenancyv1alpha1.Workspace).DeepCopy()
		ws.Finalizers = edit(ws.Finalizers)
		return ws, nil
	}), nil, nil, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("finalizers of %s: %v", name, err)
	}
}
