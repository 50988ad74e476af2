package catalog

import (
	"context"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

const home = cluster.ID("h000000000000000")

func in(id cluster.ID) context.Context {
	return cluster.WithCluster(request.WithNamespace(context.Background(), ""), id)
}

// write is one write path of the generic store: what POST, server-side
// apply (Update creating, forceAllowCreate) and their dry runs call.
type write func(ctx context.Context, s rest.StandardStorage, obj runtime.Object, dryRun bool) error

var writePaths = map[string]write{
	"create": func(ctx context.Context, s rest.StandardStorage, obj runtime.Object, dryRun bool) error {
		_, err := s.Create(ctx, obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{DryRun: dryRunOpt(dryRun)})
		return err
	},
	"update-creating": func(ctx context.Context, s rest.StandardStorage, obj runtime.Object, dryRun bool) error {
		m, _ := obj.(metav1.Object)
		_, _, err := s.Update(ctx, m.GetName(), rest.DefaultUpdatedObjectInfo(obj), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc,
			true, &metav1.UpdateOptions{DryRun: dryRunOpt(dryRun)})
		return err
	},
}

func dryRunOpt(on bool) []string {
	if on {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// TestWritePaths: the catalog's rules hold on every path that creates,
// dry run included, and status written by a creator is dropped.
func TestWritePaths(t *testing.T) {
	st := newTestStorage(t, testserver.RunEtcd(t, nil).Endpoints())
	entry := func(name string, groups ...string) *providersv1alpha1.CatalogEntry {
		e := &providersv1alpha1.CatalogEntry{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, g := range groups {
			e.Spec.APIs = append(e.Spec.APIs, providersv1alpha1.OwnedAPI{Name: "x." + g, Group: g})
		}
		e.Status.HubReplica = "forged"
		return e
	}
	binding := func(name, provider string) *providersv1alpha1.ProviderBinding {
		return &providersv1alpha1.ProviderBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: providersv1alpha1.ProviderBindingSpec{Provider: provider}}
	}
	if _, err := st.Entries.Create(in(root), entry("real", "real.example.com"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A shipped provider's entry may own its group (MayOwn).
	if _, err := st.Entries.Create(in(root), entry("edges", "edges.wharf.dev"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, do := range writePaths {
		for _, dry := range []bool{false, true} {
			for _, c := range []struct {
				name    string
				ctx     context.Context
				store   rest.StandardStorage
				obj     runtime.Object
				want    int32 // 0: allowed
				wantErr func(error) bool
			}{
				{"entry in a home", in(home), st.Entries, entry("evil", "evil.example.com"), http.StatusForbidden, apierrors.IsForbidden},
				{"entry claiming rbac in root", in(root), st.Entries, entry("evil", "rbac.authorization.k8s.io"), http.StatusUnprocessableEntity, apierrors.IsInvalid},
				{"entry claiming workspaces in root", in(root), st.Entries, entry("evil", "tenancy.wharf.dev"), http.StatusUnprocessableEntity, apierrors.IsInvalid},
				{"entry claiming the core group in root", in(root), st.Entries, entry("evil", ""), http.StatusUnprocessableEntity, apierrors.IsInvalid},
				{"entry claiming a kubernetes.io group", in(root), st.Entries, entry("evil", "x.kubernetes.io"), http.StatusUnprocessableEntity, apierrors.IsInvalid},
				{"entry claiming a shipped provider's group", in(root), st.Entries, entry("evil", "proxy.wharf.dev"), http.StatusUnprocessableEntity, apierrors.IsInvalid},
				{"entry in root", in(root), st.Entries, entry("ok-"+path, "ok.example.com"), 0, nil},
				{"binding to a missing provider", in(home), st.Bindings, binding("b", "nope"), http.StatusUnprocessableEntity, apierrors.IsInvalid},
				{"binding to a provider", in(home), st.Bindings, binding("b-"+path, "real"), 0, nil},
			} {
				name := path + "/" + c.name
				if dry {
					name += "/dry run"
				}
				t.Run(name, func(t *testing.T) {
					obj := c.obj.DeepCopyObject()
					if dry && c.want == 0 {
						obj.(metav1.Object).SetName(obj.(metav1.Object).GetName() + "-dry")
					}
					err := do(c.ctx, c.store, obj, dry)
					if c.want == 0 {
						if err != nil {
							t.Fatalf("refused: %v", err)
						}
						return
					}
					if !c.wantErr(err) || apierrors.ReasonForError(err) == "" {
						t.Fatalf("err = %v, want %d", err, c.want)
					}
					if s, ok := err.(apierrors.APIStatus); !ok || s.Status().Code != c.want {
						t.Fatalf("err = %#v, want code %d", err, c.want)
					}
				})
			}
		}
	}
	// Nothing of the refused writes or dry runs was stored.
	for _, c := range []struct {
		ctx   context.Context
		store rest.StandardStorage
		name  string
	}{
		{in(home), st.Entries, "evil"}, {in(root), st.Entries, "evil"}, {in(root), st.Entries, "ok-create-dry"},
		{in(home), st.Bindings, "b"}, {in(home), st.Bindings, "b-create-dry"},
	} {
		if _, err := c.store.Get(c.ctx, c.name, &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s was stored: %v", c.name, err)
		}
	}
	// Status is the hub's: a creator's is dropped.
	obj, err := st.Entries.Get(in(root), "ok-update-creating", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*providersv1alpha1.CatalogEntry).Status.HubReplica; got != "" {
		t.Errorf("status kept from the creator: %q", got)
	}
	if _, served := st.Map()["catalogentries/status"]; served {
		t.Error("catalogentries/status is served to clients")
	}
}

// TestCleanupFinalizerStays: a client cannot drop a binding's cleanup
// finalizer, neither before nor after asking for deletion (that would
// skip disabling); the hub's cleanup store can.
func TestCleanupFinalizerStays(t *testing.T) {
	st := newTestStorage(t, testserver.RunEtcd(t, nil).Endpoints())
	ctx := in(home)
	if _, err := st.Entries.Create(in(root), &providersv1alpha1.CatalogEntry{ObjectMeta: metav1.ObjectMeta{Name: "real"}},
		rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &providersv1alpha1.ProviderBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: providersv1alpha1.ProviderBindingSpec{Provider: "real"}}
	if _, err := st.Bindings.Create(ctx, b, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	strip := func(s rest.Updater) (*providersv1alpha1.ProviderBinding, error) {
		obj, err := st.Bindings.Get(ctx, "b", &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		cp := obj.(*providersv1alpha1.ProviderBinding).DeepCopy()
		cp.Finalizers = nil
		out, _, err := s.Update(ctx, "b", rest.DefaultUpdatedObjectInfo(cp), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*providersv1alpha1.ProviderBinding), nil
	}
	for _, deleting := range []bool{false, true} {
		if deleting {
			if _, _, err := st.Bindings.Delete(ctx, "b", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := strip(st.Bindings)
		if err != nil {
			t.Fatalf("deleting=%v: %v", deleting, err)
		}
		if len(got.Finalizers) != 1 || got.Finalizers[0] != providersv1alpha1.BindingCleanupFinalizer {
			t.Fatalf("deleting=%v: a client dropped the finalizer: %v", deleting, got.Finalizers)
		}
	}
	if _, err := strip(st.BindingsCleanup); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if _, err := st.Bindings.Get(ctx, "b", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the hub dropped the finalizer: %v", err)
	}
}
