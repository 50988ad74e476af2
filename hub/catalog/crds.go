package catalog

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// ProviderLabel marks a CRD with the provider that owns it.
const ProviderLabel = "providers.wharf.dev/provider"

// decodeCRDs parses the manifest's CRDs; the plugin checked their shape
// (plugin.Descriptor.Validate), the hub checks their groups (MayOwn: the
// hub supervisor already made the manifest's name the configured one).
func decodeCRDs(d *plugin.Descriptor) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for i, raw := range d.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(raw, crd); err != nil {
			return nil, fmt.Errorf("crd %d: %w", i, err)
		}
		if g := crd.Spec.Group; !MayOwn(d.Name, g) {
			return nil, fmt.Errorf("crd %s: group %q is reserved", crd.Name, g)
		}
		out = append(out, crd)
	}
	return out, nil
}

// specOf mirrors a manifest into a CatalogEntry spec.
func specOf(d *plugin.Descriptor, crds []*apiextensionsv1.CustomResourceDefinition) providersv1alpha1.CatalogEntrySpec {
	s := providersv1alpha1.CatalogEntrySpec{
		DisplayName: d.DisplayName, Version: d.Version, Description: d.Description, Icon: d.Icon, Category: d.Category,
		Replicas: string(d.Replicas), EdgeProxyAccess: d.EdgeProxyAccess, PublicPaths: append([]string(nil), d.PublicPaths...),
	}
	for _, c := range crds {
		s.APIs = append(s.APIs, providersv1alpha1.OwnedAPI{Name: c.Name, Group: c.Spec.Group, Resource: c.Spec.Names.Plural})
	}
	return s
}

// installCRDs creates or updates a provider's CRDs. A CRD already owned by
// another provider is left alone and reported.
func installCRDs(ctx context.Context, c apiextensionsclient.CustomResourceDefinitionInterface, provider string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, want := range crds {
		want = want.DeepCopy()
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		want.Labels[ProviderLabel] = provider
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got, err := c.Get(ctx, want.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = c.Create(ctx, want, metav1.CreateOptions{FieldManager: "wharf-catalog"})
				return err
			}
			if err != nil {
				return err
			}
			if owner := got.Labels[ProviderLabel]; owner != provider {
				return fmt.Errorf("crd %s is owned by %q, not by provider %q", want.Name, owner, provider)
			}
			got.Spec = want.Spec
			for k, v := range want.Labels {
				if got.Labels == nil {
					got.Labels = map[string]string{}
				}
				got.Labels[k] = v
			}
			_, err = c.Update(ctx, got, metav1.UpdateOptions{FieldManager: "wharf-catalog"})
			return err
		})
		if err != nil {
			return fmt.Errorf("installing crd %s: %w", want.Name, err)
		}
	}
	return nil
}
