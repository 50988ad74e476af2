package aggregation

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/providerauth"
)

const (
	// ProtectedLabel marks an APIService another object manages; its
	// value names the only provider that may delete it.
	ProtectedLabel = "wharf.dev/protected"
	// ResourceProxyProvider is the provider whose APIServices carry
	// ProtectedLabel=resource-proxy.
	ResourceProxyProvider = "resource-proxy"
)

// Admission decides who may make an APIService route where; see the
// package doc. It runs on every write of apiservices, status and dry-run
// included, as a validating plugin (after defaulting and SSA merging, so
// it sees the object that would be stored).
type Admission struct {
	*admission.Handler
	// enabled reports whether a provider is enabled in a workspace.
	enabled func(id cluster.ID, provider string) bool
}

var _ admission.ValidationInterface = &Admission{}

// NewAdmission returns the plugin; enabled is the catalog's answer.
func NewAdmission(enabled func(id cluster.ID, provider string) bool) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), enabled: enabled}
}

// Validate implements admission.ValidationInterface.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if attrs.GetResource().GroupResource() != Resource.GroupResource() {
		return nil
	}
	provider, isProvider := providerauth.Provider(attrs.GetUserInfo())
	if attrs.GetSubresource() == "status" {
		// The hub keeps status (available.go) through storage; no client
		// may claim a provider is available.
		return a.forbid(attrs, "the status of an APIService is kept by the hub")
	}
	if attrs.GetSubresource() != "" {
		return nil
	}
	newObj, _ := asAPIService(attrs.GetObject())
	oldObj, _ := asAPIService(attrs.GetOldObject())
	switch attrs.GetOperation() {
	case admission.Delete:
		if oldObj != nil && oldObj.Labels[ProtectedLabel] == ResourceProxyProvider && (!isProvider || provider != ResourceProxyProvider) &&
			!isLoopback(attrs.GetUserInfo()) {
			return a.forbid(attrs, fmt.Sprintf("APIService %q is managed by a ResourceProxy; delete the ResourceProxy instead", attrs.GetName()))
		}
		return nil
	case admission.Create:
		if newObj == nil {
			return nil
		}
		return a.mayRoute(ctx, attrs, newObj, provider, isProvider)
	case admission.Update:
		if newObj == nil || oldObj == nil {
			return nil
		}
		if sameRouting(newObj, oldObj) {
			// Other changes are RBAC's business.
			return nil
		}
		return a.mayRoute(ctx, attrs, newObj, provider, isProvider)
	}
	return nil
}

// mayRoute allows an APIService routing to provider P only to P's own
// identity, in a workspace where P is enabled. The protection label is
// P's to set: only resource-proxy may set it to resource-proxy.
func (a *Admission) mayRoute(ctx context.Context, attrs admission.Attributes, s *apiregv1.APIService, provider string, isProvider bool) error {
	target := ""
	if s.Spec.Service != nil {
		target = s.Spec.Service.Name
	}
	if !isProvider || target == "" || provider != target {
		return a.forbid(attrs, "only the provider an APIService names in spec.service may create it or point it at itself")
	}
	if v, ok := s.Labels[ProtectedLabel]; ok && v != provider {
		return a.forbid(attrs, fmt.Sprintf("label %s=%s may only be set by provider %q", ProtectedLabel, v, v))
	}
	id, ok := cluster.From(ctx)
	if !ok || a.enabled == nil || !a.enabled(id, provider) {
		return a.forbid(attrs, fmt.Sprintf("provider %q is not enabled in this workspace", provider))
	}
	return nil
}

// sameRouting reports whether an update keeps what decides routing and
// protection: spec.service and the protection label.
func sameRouting(n, o *apiregv1.APIService) bool {
	if n.Labels[ProtectedLabel] != o.Labels[ProtectedLabel] {
		return false
	}
	_, nHas := n.Labels[ProtectedLabel]
	_, oHas := o.Labels[ProtectedLabel]
	if nHas != oHas {
		return false
	}
	switch {
	case n.Spec.Service == nil && o.Spec.Service == nil:
		return true
	case n.Spec.Service == nil || o.Spec.Service == nil:
		return false
	}
	return n.Spec.Service.Namespace == o.Spec.Service.Namespace && n.Spec.Service.Name == o.Spec.Service.Name
}

func (a *Admission) forbid(attrs admission.Attributes, msg string) error {
	return apierrors.NewForbidden(attrs.GetResource().GroupResource(), attrs.GetName(), fmt.Errorf("%s", msg))
}

// isLoopback is the hub's own loopback client, which deletes a deleted
// workspace's content (hub/workspaces): its token exists in the hub's
// memory only, so no client can act as it, and a protected APIService must
// not hold up a workspace's deletion.
func isLoopback(u user.Info) bool {
	return u != nil && u.GetName() == user.APIServerUser && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

func asAPIService(obj runtime.Object) (*apiregv1.APIService, bool) {
	s, ok := obj.(*apiregv1.APIService)
	return s, ok && s != nil
}
