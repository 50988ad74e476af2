package catalog

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// The admission rules of providers.wharf.dev are genericregistry.Store
// hooks, not overrides of Create: the generic store runs BeginCreate on
// every path that creates an object (POST, and PUT or server-side apply of
// a missing name through Update), before anything is written and also for
// dry-run requests, and BeginUpdate on every update (PUT, every patch type,
// the status store). A rule in a Create method holds on POST only.

// hooks are the store hooks of one kind; nil members are not set.
type hooks struct {
	create genericregistry.BeginCreateFunc
	update genericregistry.BeginUpdateFunc
}

func finishNothing(context.Context, bool) {}

// errNotInRoot is the one answer for every write of a CatalogEntry outside
// root, whatever the path, so that the paths cannot be told apart.
var errNotInRoot = errors.New("catalog entries exist only in the root workspace")

// rootOnly confines writes to the root workspace's logical cluster, the
// one the request was resolved to (never a field of the object). Deletes
// stay possible anywhere, so entries written elsewhere before this rule
// existed can be removed.
func rootOnly(root cluster.ID) hooks {
	check := func(ctx context.Context) error {
		if id, ok := cluster.From(ctx); !ok || id != root {
			return apierrors.NewForbidden(providersv1alpha1.Resource("catalogentries"), "", errNotInRoot)
		}
		return nil
	}
	return hooks{
		create: func(ctx context.Context, _ runtime.Object, _ *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
			return finishNothing, check(ctx)
		},
		update: func(ctx context.Context, _, _ runtime.Object, _ *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
			return finishNothing, check(ctx)
		},
	}
}

// providerExists admits a new binding only for a provider in the catalog
// (in root, read with the hub's storage, not the caller's view). Updates
// need no check: spec.provider is immutable.
func providerExists(entries *EntryREST) genericregistry.BeginCreateFunc {
	return func(ctx context.Context, obj runtime.Object, _ *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
		b, ok := obj.(*providersv1alpha1.ProviderBinding)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("not a ProviderBinding: %T", obj))
		}
		if b.Spec.Provider == "" {
			// Validate reports the missing field.
			return finishNothing, nil
		}
		_, err := entries.Get(cluster.WithCluster(ctx, entries.root), b.Spec.Provider, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewInvalid(providersv1alpha1.SchemeGroupVersion.WithKind("ProviderBinding").GroupKind(), b.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "provider"), b.Spec.Provider,
					"no such provider in the catalog (see kubectl get catalogentries in root)")})
		}
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("looking up provider %q: %w", b.Spec.Provider, err))
		}
		return finishNothing, nil
	}
}
