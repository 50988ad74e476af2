package aggregation

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

func svc(provider string, labels map[string]string) *apiregv1.APIService {
	return &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.probe.example.com", Labels: labels},
		Spec: apiregv1.APIServiceSpec{Group: "probe.example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: ProviderNamespace, Name: provider}},
	}
}

func providerUser(name string) user.Info {
	return &user.DefaultInfo{Name: providersv1alpha1.ProviderUser(name), Groups: []string{providersv1alpha1.ProvidersGroup}}
}

// TestAdmission covers each operation and who makes it.
func TestAdmission(t *testing.T) {
	enabled := func(id cluster.ID, p string) bool { return id == "a" && (p == "probe" || p == "resource-proxy") }
	adm := NewAdmission(enabled)
	protected := map[string]string{ProtectedLabel: ResourceProxyProvider}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:masters"}}
	loopback := &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}
	for _, c := range []struct {
		name     string
		cluster  cluster.ID
		op       admission.Operation
		sub      string
		obj, old *apiregv1.APIService
		who      user.Info
		wantErr  string
	}{
		{"provider creates its own", "a", admission.Create, "", svc("probe", nil), nil, providerUser("probe"), ""},
		{"provider creates where not enabled", "b", admission.Create, "", svc("probe", nil), nil, providerUser("probe"), "not enabled"},
		{"provider creates for another", "a", admission.Create, "", svc("resource-proxy", nil), nil, providerUser("probe"), "only the provider"},
		{"user creates", "a", admission.Create, "", svc("probe", nil), nil, alice, "only the provider"},
		{"forged provider name without the group", "a", admission.Create, "", svc("probe", nil), nil,
			&user.DefaultInfo{Name: providersv1alpha1.ProviderUser("probe")}, "only the provider"},
		{"provider sets another's label", "a", admission.Create, "", svc("probe", protected), nil, providerUser("probe"), "may only be set"},
		{"resource-proxy sets its label", "a", admission.Create, "", svc("resource-proxy", protected), nil, providerUser("resource-proxy"), ""},
		{"user keeps routing", "a", admission.Update, "", svc("probe", map[string]string{"x": "y"}), svc("probe", nil), alice, ""},
		{"user repoints", "a", admission.Update, "", svc("resource-proxy", nil), svc("probe", nil), alice, "only the provider"},
		{"user drops the label", "a", admission.Update, "", svc("resource-proxy", nil), svc("resource-proxy", protected), alice, "only the provider"},
		{"user adds the label", "a", admission.Update, "", svc("resource-proxy", protected), svc("resource-proxy", nil), alice, "only the provider"},
		{"provider repoints to itself", "a", admission.Update, "", svc("probe", nil), svc("resource-proxy", nil), providerUser("probe"), ""},
		{"status by a user", "a", admission.Update, "status", svc("probe", nil), svc("probe", nil), alice, "kept by the hub"},
		{"status by the provider", "a", admission.Update, "status", svc("probe", nil), svc("probe", nil), providerUser("probe"), "kept by the hub"},
		{"user deletes protected", "a", admission.Delete, "", nil, svc("resource-proxy", protected), alice, "delete the ResourceProxy instead"},
		{"other provider deletes protected", "a", admission.Delete, "", nil, svc("resource-proxy", protected), providerUser("probe"), "delete the ResourceProxy instead"},
		{"resource-proxy deletes protected", "a", admission.Delete, "", nil, svc("resource-proxy", protected), providerUser("resource-proxy"), ""},
		{"loopback deletes protected (workspace deletion)", "a", admission.Delete, "", nil, svc("resource-proxy", protected), loopback, ""},
		{"user deletes unprotected", "a", admission.Delete, "", nil, svc("probe", nil), alice, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var obj, old runtime.Object
			if c.obj != nil {
				obj = c.obj
			}
			if c.old != nil {
				old = c.old
			}
			attrs := admission.NewAttributesRecord(obj, old, apiregv1.SchemeGroupVersion.WithKind("APIService"), "", "v1.probe.example.com",
				Resource, c.sub, c.op, nil, false, c.who)
			err := adm.Validate(cluster.WithCluster(context.Background(), c.cluster), attrs, nil)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("denied: %v", err)
			case c.wantErr != "" && (err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("got %v, want a 403 with %q", err, c.wantErr)
			}
		})
	}
}

// TestValidate: upstream's rules plus the hub's.
func TestValidate(t *testing.T) {
	owned := func(g string) bool { return g == "edges.wharf.dev" }
	for _, c := range []struct {
		name string
		mod  func(*apiregv1.APIService)
		want string
	}{
		{"valid", func(*apiregv1.APIService) {}, ""},
		{"name is not version.group", func(s *apiregv1.APIService) { s.Name = "x" }, "metadata.name"},
		{"namespace not wharf-providers", func(s *apiregv1.APIService) { s.Spec.Service.Namespace = "default" }, "spec.service.namespace"},
		{"local", func(s *apiregv1.APIService) { s.Spec.Service = nil }, "spec.service: Required"},
		{"reserved group", func(s *apiregv1.APIService) {
			s.Spec.Group, s.Name = "rbac.authorization.k8s.io", "v1.rbac.authorization.k8s.io"
		}, "spec.group: Forbidden"},
		{"unqualified group", func(s *apiregv1.APIService) { s.Spec.Group, s.Name = "apps", "v1.apps" }, "spec.group: Forbidden"},
		{"catalog group", func(s *apiregv1.APIService) { s.Spec.Group, s.Name = "edges.wharf.dev", "v1.edges.wharf.dev" }, "belongs to a provider in the catalog"},
		// resource-proxy is not loaded here (no entry owns its group),
		// and its group stays reserved all the same.
		{"shipped provider's group, not loaded", func(s *apiregv1.APIService) {
			s.Spec.Group, s.Name = "proxy.wharf.dev", "v1.proxy.wharf.dev"
		}, "belongs to a provider that ships with the hub"},
		{"other wharf.dev group", func(s *apiregv1.APIService) { s.Spec.Group, s.Name = "probe.wharf.dev", "v1.probe.wharf.dev" }, ""},
		{"priority out of range", func(s *apiregv1.APIService) { s.Spec.GroupPriorityMinimum = 0 }, "spec.groupPriorityMinimum"},
		{"bad port", func(s *apiregv1.APIService) { p := int32(0); s.Spec.Service.Port = &p }, "spec.service.port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := svc("probe", nil)
			p := int32(443)
			s.Spec.Service.Port = &p
			c.mod(s)
			errs := validate(s, owned)
			switch {
			case c.want == "" && len(errs) > 0:
				t.Errorf("invalid: %v", errs)
			case c.want != "" && !strings.Contains(errs.ToAggregate().Error(), c.want):
				t.Errorf("got %v, want %q", errs, c.want)
			}
		})
	}
}

func TestStaysUnder(t *testing.T) {
	const pre = "/apis/probe.example.com/v1/"
	for p, want := range map[string]bool{
		"/apis/probe.example.com/v1/probes":                   true,
		"/apis/probe.example.com/v1/probes/":                  true,
		"/apis/probe.example.com/v1/namespaces/x/probes/echo": true,
		"/apis/probe.example.com/v1/../../../api/v1/secrets":  false,
		"/apis/probe.example.com/v1/probes/../../v2/probes":   false,
		"/apis/probe.example.com/v1/probes/./echo":            false,
		"/apis/probe.example.com/v1//probes":                  false,
		"/apis/other.example.com/v1/probes":                   false,
	} {
		if got := staysUnder(p, pre); got != want {
			t.Errorf("staysUnder(%q) = %v, want %v", p, got, want)
		}
	}
}
