package workspaces

import (
	"context"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// TestDeletionFollowsIndex deletes a child whose status names another
// workspace (root, a sibling, nothing) by delete and by deletecollection:
// exactly the child and its descendants go, per the index.
func TestDeletionFollowsIndex(t *testing.T) {
	tests := []struct {
		name       string
		status     func(victim *tenancyv1alpha1.Workspace, root cluster.ID) tenancyv1alpha1.WorkspaceStatus
		collection bool
	}{
		{name: "status names a sibling", status: func(v *tenancyv1alpha1.Workspace, _ cluster.ID) tenancyv1alpha1.WorkspaceStatus {
			return v.Status
		}},
		{name: "status names root", status: func(_ *tenancyv1alpha1.Workspace, root cluster.ID) tenancyv1alpha1.WorkspaceStatus {
			return tenancyv1alpha1.WorkspaceStatus{Cluster: string(root), Path: "root"}
		}},
		{name: "status names root, deletecollection", collection: true, status: func(_ *tenancyv1alpha1.Workspace, root cluster.ID) tenancyv1alpha1.WorkspaceStatus {
			return tenancyv1alpha1.WorkspaceStatus{Cluster: string(root), Path: "root"}
		}},
		{name: "status emptied", status: func(*tenancyv1alpha1.Workspace, cluster.ID) tenancyv1alpha1.WorkspaceStatus {
			return tenancyv1alpha1.WorkspaceStatus{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			victim := f.create(t, f.root, "victim")
			victimID := cluster.ID(victim.Status.Cluster)
			f.create(t, victimID, "victim-child")
			attacker := f.create(t, f.root, "attacker")
			attackerID := cluster.ID(attacker.Status.Cluster)
			f.create(t, attackerID, "inner")
			f.tamper(t, f.root, "attacker", tt.status(victim, f.root))

			if tt.collection {
				sel := labels.SelectorFromSet(labels.Set{"x": "y"})
				if err := f.rest.hubUpdate(in(f.root), "attacker", func(w *tenancyv1alpha1.Workspace) { w.Labels = map[string]string{"x": "y"} }); err != nil {
					t.Fatal(err)
				}
				if _, err := f.rest.DeleteCollection(in(f.root), rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}, &metainternalversion.ListOptions{LabelSelector: sel}); err != nil {
					t.Fatal(err)
				}
			} else if _, _, err := f.rest.Delete(in(f.root), "attacker", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			pending, err := f.get(t, f.root, "attacker")
			if err != nil || pending.DeletionTimestamp == nil {
				t.Fatalf("deletion does not wait for the controller: %+v, %v", pending, err)
			}
			// Children are no longer finished inline: they remain until
			// the (zero) grace period has passed on the fake clock, which
			// must not lag the second-precision deletion timestamp (it did
			// when setup straddled a second, under load).
			f.clock.SetTime(pending.DeletionTimestamp.Add(time.Second))
			if _, err := f.ctrl.finish(ctx, pending); err != nil {
				t.Fatal(err)
			}

			if _, err := f.get(t, f.root, "attacker"); err == nil {
				t.Error("deleted workspace still stored")
			}
			for _, p := range []cluster.Path{"root:attacker", "root:attacker:inner"} {
				if f.recorded(t, p) {
					t.Errorf("%s still in the index", p)
				}
			}
			for _, p := range []cluster.Path{"root", "root:victim", "root:victim:victim-child"} {
				if !f.recorded(t, p) {
					t.Errorf("%s purged from the index", p)
				}
			}
			if _, err := f.get(t, victimID, "victim-child"); err != nil {
				t.Errorf("victim's object purged: %v", err)
			}
			if _, err := f.get(t, f.root, "victim"); err != nil {
				t.Errorf("root's object purged: %v", err)
			}
		})
	}
}

// TestOrphansLeaveLiveWorkspaces runs the collector over a live child
// whose status no longer names its cluster, next to real orphans.
func TestOrphansLeaveLiveWorkspaces(t *testing.T) {
	tests := []struct {
		name       string
		age        time.Duration
		orphansRun bool
	}{
		{name: "within grace", age: time.Minute},
		{name: "after grace", age: 3 * time.Minute, orphansRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			live := f.create(t, f.root, "live")
			f.create(t, cluster.ID(live.Status.Cluster), "inner")
			f.tamper(t, f.root, "live", tenancyv1alpha1.WorkspaceStatus{Cluster: "zzzzzzzzzzzzzzzz", Path: "root:elsewhere"})
			// A hub that died between allocating and storing, and a record
			// whose parent is gone.
			for _, p := range []cluster.Path{"root:gone", "root:nope:x"} {
				if _, err := f.index.Allocate(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.SetTime(time.Now().Add(tt.age))
			f.ctrl.collectOrphans(ctx)

			for _, p := range []cluster.Path{"root", "root:live", "root:live:inner"} {
				if !f.recorded(t, p) {
					t.Errorf("live workspace %s collected", p)
				}
			}
			for _, p := range []cluster.Path{"root:gone", "root:nope:x"} {
				if f.recorded(t, p) == tt.orphansRun {
					t.Errorf("orphan %s recorded = %v, want %v", p, !tt.orphansRun, !tt.orphansRun)
				}
			}
		})
	}
}
