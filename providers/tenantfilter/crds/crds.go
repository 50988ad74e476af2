package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// ManagedByLabel marks the CRDs this package wrote; Apply updates only those.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "wharf-tenant-filter"
)

//go:embed *.yaml
var files embed.FS

// All returns every CRD manifest (YAML), in a stable order.
func All() [][]byte {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		panic(err) // the pattern is constant; Glob fails only on a bad pattern
	}
	sort.Strings(names)
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time
		}
		out = append(out, b)
	}
	return out
}

// Manifest is All joined into one multi-document YAML stream.
func Manifest() []byte {
	var out []byte
	for i, b := range All() {
		if i > 0 {
			out = append(out, []byte("---\n")...)
		}
		out = append(out, b...)
	}
	return out
}

// Objects decodes All into CRD objects.
func Objects() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, b := range All() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("decode embedded CRD: %w", err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Apply creates each CRD that is missing, updates the ones this package
// wrote earlier, leaves any other (Capsule's own) untouched, and waits until
// all four are Established or ctx ends.
func Apply(ctx context.Context, cfg *rest.Config) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	objs, err := Objects()
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, want := range objs {
		if err := applyOne(ctx, api, want); err != nil {
			return err
		}
	}
	for _, want := range objs {
		if err := waitEstablished(ctx, api, want.Name); err != nil {
			return err
		}
	}
	return nil
}

type crdAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Create(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Update(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

func applyOne(ctx context.Context, api crdAPI, want *apiextensionsv1.CustomResourceDefinition) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(apiextensionsv1.Resource("customresourcedefinitions"), want.Name, err)
			}
			if err != nil {
				return fmt.Errorf("create CRD %s: %w", want.Name, err)
			}
			klog.FromContext(ctx).Info("Created CRD", "crd", want.Name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("get CRD %s: %w", want.Name, err)
		}
		if have.Labels[ManagedByLabel] != ManagedByValue {
			// Capsule's own CRD (or someone else's): it serves what Capsule
			// needs, and replacing it would drop versions it stores.
			klog.FromContext(ctx).Info("Keeping existing CRD not written by the tenant filter", "crd", want.Name)
			return nil
		}
		upd := have.DeepCopy()
		upd.Labels = want.Labels
		upd.Spec = want.Spec
		if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("update CRD %s: %w", want.Name, err)
		}
		return nil
	})
}

func waitEstablished(ctx context.Context, api crdAPI, name string) error {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; the context bounds the wait
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}
