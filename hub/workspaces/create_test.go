package workspaces

import (
	"context"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// TestCreatePaths checks that every way of creating a Workspace allocates
// it the same way (or, for dry runs, not at all), whatever status the
// client sends.
func TestCreatePaths(t *testing.T) {
	f := newFixture(t)
	forged := tenancyv1alpha1.WorkspaceStatus{Cluster: string(f.root), Path: "root"}
	tests := []struct {
		name    string
		do      func(name string, validate rest.ValidateObjectFunc) (runtime.Object, error)
		stored  bool
		wantErr func(error) bool
	}{
		{name: "create", stored: true, do: func(name string, v rest.ValidateObjectFunc) (runtime.Object, error) {
			return f.rest.Create(in(f.root), newWS(name, forged), v, &metav1.CreateOptions{})
		}},
		{name: "dry-run create", do: func(name string, v rest.ValidateObjectFunc) (runtime.Object, error) {
			return f.rest.Create(in(f.root), newWS(name, forged), v, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{name: "server-side apply create", stored: true, do: func(name string, v rest.ValidateObjectFunc) (runtime.Object, error) {
			out, created, err := f.rest.Update(in(f.root), name, rest.DefaultUpdatedObjectInfo(newWS(name, forged)), v, nil, true, &metav1.UpdateOptions{})
			if err == nil && !created {
				t.Errorf("apply of a new workspace reported no creation")
			}
			return out, err
		}},
		{name: "dry-run server-side apply create", do: func(name string, v rest.ValidateObjectFunc) (runtime.Object, error) {
			return applyNew(f, name, forged, v, []string{metav1.DryRunAll})
		}},
		{name: "put without create on update", wantErr: apierrors.IsNotFound, do: func(name string, v rest.ValidateObjectFunc) (runtime.Object, error) {
			out, _, err := f.rest.Update(in(f.root), name, rest.DefaultUpdatedObjectInfo(newWS(name, forged)), v, nil, false, &metav1.UpdateOptions{})
			return out, err
		}},
		{name: "upstream store create on update is refused", wantErr: apierrors.IsInternalError, do: func(name string, v rest.ValidateObjectFunc) (runtime.Object, error) {
			out, _, err := f.rest.Store.Update(in(f.root), name, rest.DefaultUpdatedObjectInfo(newWS(name, forged)), v, nil, true, &metav1.UpdateOptions{})
			return out, err
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "w" + string(rune('a'+i))
			path := cluster.RootPath.Join(name)
			validated, initializedBefore := 0, len(f.initialized)
			out, err := tt.do(name, func(context.Context, runtime.Object) error { validated++; return nil })
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("err = %v, want the other kind", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			stored, getErr := f.get(t, f.root, name)
			if tt.stored != (getErr == nil) {
				t.Fatalf("stored = %v (%v), want %v", getErr == nil, getErr, tt.stored)
			}
			if tt.stored != f.recorded(t, path) {
				t.Fatalf("index record of %s present = %v, want %v", path, !tt.stored, tt.stored)
			}
			if tt.wantErr == nil && validated != 1 {
				t.Errorf("create validation ran %d times, want 1", validated)
			}
			if !tt.stored {
				if len(f.initialized) != initializedBefore {
					t.Errorf("a path that stores nothing initialized a cluster")
				}
				return
			}
			info, _ := f.index.Lookup(context.Background(), path)
			for _, ws := range []*tenancyv1alpha1.Workspace{out.(*tenancyv1alpha1.Workspace), stored} {
				if ws.Status.Cluster != string(info.ID) || ws.Status.Path != string(path) || ws.Status.Phase != tenancyv1alpha1.WorkspacePhaseReady {
					t.Errorf("status = %+v, want cluster %s path %s Ready", ws.Status, info.ID, path)
				}
				if !hasFinalizer(ws, tenancyv1alpha1.WorkspaceCleanupFinalizer) {
					t.Errorf("finalizers = %v, want the cleanup finalizer", ws.Finalizers)
				}
			}
			if f.initialized[info.ID] != "bob" {
				t.Errorf("cluster %s initialized for %q, want the creator bob", info.ID, f.initialized[info.ID])
			}
		})
	}
}

func applyNew(f *fixture, name string, st tenancyv1alpha1.WorkspaceStatus, v rest.ValidateObjectFunc, dryRun []string) (runtime.Object, error) {
	out, _, err := f.rest.Update(in(f.root), name, rest.DefaultUpdatedObjectInfo(newWS(name, st)), v, nil, true, &metav1.UpdateOptions{DryRun: dryRun})
	return out, err
}

func newWS(name string, st tenancyv1alpha1.WorkspaceStatus) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: st}
}

// TestClientUpdatesKeepHubFields checks that a client's update (PUT, any
// patch, apply: all reach Update) keeps status and the cleanup finalizer,
// and that the hub's own store changes them.
func TestClientUpdatesKeepHubFields(t *testing.T) {
	f := newFixture(t)
	ws := f.create(t, f.root, "keep")
	for _, force := range []bool{false, true} {
		forged := ws.DeepCopy()
		forged.ResourceVersion = ""
		forged.Status = tenancyv1alpha1.WorkspaceStatus{Cluster: string(f.root), Path: "root", Phase: tenancyv1alpha1.WorkspacePhaseTerminating}
		forged.Finalizers = nil
		forged.Labels = map[string]string{"edited": "yes"}
		out, created, err := f.rest.Update(in(f.root), "keep", rest.DefaultUpdatedObjectInfo(forged), nil, nil, force, &metav1.UpdateOptions{})
		if err != nil || created {
			t.Fatalf("update (create on update %v): created %v, %v", force, created, err)
		}
		got := out.(*tenancyv1alpha1.Workspace)
		if !apiequality.Semantic.DeepEqual(got.Status, ws.Status) || !hasFinalizer(got, tenancyv1alpha1.WorkspaceCleanupFinalizer) || got.Labels["edited"] != "yes" {
			t.Errorf("after client update: status %+v finalizers %v labels %v; want status %+v, the finalizer, the label", got.Status, got.Finalizers, got.Labels, ws.Status)
		}
	}
	if err := f.rest.hubUpdate(in(f.root), "keep", func(w *tenancyv1alpha1.Workspace) {
		w.Status.Phase = tenancyv1alpha1.WorkspacePhaseTerminating
		w.Finalizers = nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := f.get(t, f.root, "keep")
	if err != nil || got.Status.Phase != tenancyv1alpha1.WorkspacePhaseTerminating || len(got.Finalizers) != 0 {
		t.Fatalf("after hub update: %+v, %v", got, err)
	}
}
