package aggregation

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	upstream "k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"

	"github.com/wharfhub/wharf/hub/catalog"
)

// ProviderNamespace is the only spec.service.namespace an APIService may
// name: the hub has no Services, spec.service names a provider.
const ProviderNamespace = "wharf-providers"

// internalScheme converts v1 to the internal types upstream's validation
// takes, so the rules are kube-aggregator's own, not a copy.
var internalScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

func toInternal(s *apiregv1.APIService) (*apiregistration.APIService, error) {
	out := &apiregistration.APIService{}
	if err := internalScheme.Convert(s, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// validate is kube-aggregator's validation of the fields the hub uses, and
// the hub's own rules: spec.service names a provider, and the group is
// neither one the hub or Kubernetes serve, nor one a catalog entry owns,
// nor one of a provider that ships with the hub.
func validate(s *apiregv1.APIService, groupOwned func(string) bool) field.ErrorList {
	in, err := toInternal(s)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	// The registry's strategy already validated the rest of the metadata;
	// upstream's name rule (<version>.<group>) is kept.
	var errs field.ErrorList
	for _, e := range upstream.ValidateAPIService(context.Background(), in) {
		if !strings.HasPrefix(e.Field, "metadata.") || e.Field == "metadata.name" {
			errs = append(errs, e)
		}
	}
	svc := field.NewPath("spec", "service")
	switch {
	case s.Spec.Service == nil:
		// Local APIServices are the hub's own groups, never stored.
		errs = append(errs, field.Required(svc, "must name a provider (namespace "+ProviderNamespace+")"))
	case s.Spec.Service.Namespace != ProviderNamespace:
		errs = append(errs, field.NotSupported(svc.Child("namespace"), s.Spec.Service.Namespace, []string{ProviderNamespace}))
	}
	g := field.NewPath("spec", "group")
	switch {
	case s.Spec.Group == "" || catalog.ReservedGroup(s.Spec.Group):
		errs = append(errs, field.Forbidden(g, "group "+quote(s.Spec.Group)+" is served by the hub or reserved by Kubernetes"))
	case groupOwned != nil && groupOwned(s.Spec.Group):
		errs = append(errs, field.Forbidden(g, "group "+quote(s.Spec.Group)+" belongs to a provider in the catalog"))
	case isShipped(s.Spec.Group):
		// Reserved even where that provider is not loaded (so no
		// catalog entry owns it): the hub gives these groups meaning.
		errs = append(errs, field.Forbidden(g, "group "+quote(s.Spec.Group)+" belongs to a provider that ships with the hub"))
	}
	return errs
}

// validateUpdate adds nothing to the new object's validation, which the
// registry's strategy runs on every update: upstream's update rules are the
// metadata's and the object's own.
func validateUpdate(_, _ *apiregv1.APIService) field.ErrorList { return nil }

// validateStatusUpdate is upstream's status rule: condition statuses are
// True, False or Unknown.
func validateStatusUpdate(n, _ *apiregv1.APIService) field.ErrorList {
	in, err := toInternal(n)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("status"), err)}
	}
	return upstream.ValidateAPIServiceStatus(&in.Status, field.NewPath("status"))
}

func isShipped(group string) bool {
	_, ok := catalog.ShippedGroup(group)
	return ok
}

func quote(s string) string { return "\"" + s + "\"" }
