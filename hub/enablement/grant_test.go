package enablement

import (
	"context"
	"fmt"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/registry"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// rbacOptions stores through the hub's cluster decorator on a real etcd.
type rbacOptions struct{ endpoints []string }

func (g rbacOptions) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	s := scheme.New()
	cfg := storagebackend.NewDefaultConfig("/registry", scheme.NewCodecs(s).LegacyCodec(rbacv1.SchemeGroupVersion))
	cfg.Transport.ServerList = g.endpoints
	return wstorage.RESTOptionsGetter{Delegate: generic.RESTOptions{
		StorageConfig: cfg.ForResource(gr), Decorator: genericregistry.StorageWithCacher(), ResourcePrefix: gr.Group + "/" + gr.Resource,
	}}.GetRESTOptions(gr, example)
}

func rbacStores(t *testing.T) (roles, bindings *registry.Store) {
	t.Helper()
	opts := rbacOptions{testserver.RunEtcd(t, nil).Endpoints()}
	for _, k := range registry.BuiltinKinds()[rbacv1.SchemeGroupVersion] {
		s, err := registry.NewStore(scheme.New(), opts, k)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.DestroyFunc)
		switch k.Resource.Resource {
		case "clusterroles":
			roles = s
		case "clusterrolebindings":
			bindings = s
		}
	}
	return roles, bindings
}

// TestEdgeProxyGrantIsExact: whatever a workspace admin created under the
// grant's names first, the controller leaves exactly the grant: the proxy
// verb on edges, bound to the provider alone.
func TestEdgeProxyGrantIsExact(t *testing.T) {
	roles, bindings := rbacStores(t)
	c := &Controller{cfg: Config{ClusterRoles: roles, RoleBindings: bindings}}
	name := edgeProxyGrant("edges")
	wantRole, wantBinding := edgeProxyObjects("edges")
	for i, tc := range []struct {
		name    string
		planted []runtime.Object
	}{
		{"nothing planted", nil},
		{"a role granting everything", []runtime.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}}},
		{"an aggregated role", []runtime.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}}},
		{"a binding of other subjects", []runtime.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", APIGroup: rbacv1.GroupName, Name: name}}}},
		{"a binding to another role", []runtime.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects: wantBinding.Subjects, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", APIGroup: rbacv1.GroupName, Name: "admin"}}}},
	} {
		// Each case in a workspace of its own.
		ctx := hubContext(context.Background(), cluster.ID(fmt.Sprintf("w%015d", i)))
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range tc.planted {
				s := rest.Creater(roles)
				if _, ok := o.(*rbacv1.ClusterRoleBinding); ok {
					s = bindings
				}
				if _, err := s.Create(ctx, o, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.grantEdgeProxy(ctx, "edges"); err != nil {
				t.Fatal(err)
			}
			r, err := roles.Get(ctx, name, &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.(*rbacv1.ClusterRole); got.AggregationRule != nil || !apiequality.Semantic.DeepEqual(got.Rules, wantRole.Rules) {
				t.Errorf("role = %+v %+v", got.Rules, got.AggregationRule)
			}
			b, err := bindings.Get(ctx, name, &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.(*rbacv1.ClusterRoleBinding); got.RoleRef != wantBinding.RoleRef || len(got.Subjects) != 1 || got.Subjects[0] != wantBinding.Subjects[0] {
				t.Errorf("binding = %+v -> %+v", got.Subjects, got.RoleRef)
			}
		})
	}
}
