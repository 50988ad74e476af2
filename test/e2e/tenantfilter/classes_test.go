package tenantfilter

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// TestOwnersClassGrants: Tenant.spec.owners[].proxySettings[] give owners
// the nodes, storage classes and volumes their tenant may use, with List,
// Update and Delete, always (ProxyClusterScoped off here), through the real
// kubectl.
func TestOwnersClassGrants(t *testing.T) {
	pool := uniq("cls")
	windNode, solarNode := pool+"-wind", pool+"-solar"
	createNode(t, windNode, map[string]string{"pool": pool + "-wind"})
	createNode(t, solarNode, map[string]string{"pool": pool + "-solar"})
	createNodeLease(t, windNode)
	createNodeLease(t, solarNode)
	scFast, scDefault, scRegex, scLabel, scOther := pool+"-fast", pool+"-std", pool+"-rx-ssd", pool+"-lbl", pool+"-other"
	for _, sc := range []string{scFast, scDefault, scRegex, scOther} {
		createStorageClass(t, sc, nil)
	}
	createStorageClass(t, scLabel, map[string]string{"tier": pool})

	// rules-owner owns wind: nodes (List, Update) by nodeSelector, storage
	// classes by name/default/regexp/labels, PVs of its namespaces.
	wind := newTenant(uniq("cls-wind"), userOwner("rules-owner",
		kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation, capsulev1beta2.UpdateOperation),
		kindOps(capsulev1beta2.StorageClassesProxy, capsulev1beta2.ListOperation),
		kindOps(capsulev1beta2.PersistentVolumesProxy, capsulev1beta2.ListOperation),
		kindOps(capsulev1beta2.IngressClassesProxy, capsulev1beta2.ListOperation, capsulev1beta2.DeleteOperation),
		kindOps(capsulev1beta2.PriorityClassesProxy, capsulev1beta2.ListOperation)))
	icMine, icOther, pcMine, pcOther := pool+"-ic-nginx", pool+"-ic-other", pool+"-pc-high", pool+"-pc-other"
	createIngressClass(t, icMine)
	createIngressClass(t, icOther)
	createPriorityClass(t, pcMine, map[string]string{"tier": pool})
	createPriorityClass(t, pcOther, nil)
	wind.Spec.IngressOptions.AllowedClasses = &capsulev1beta2.DefaultAllowedListSpec{
		SelectorAllowedListSpec: capsulev1beta2.SelectorAllowedListSpec{AllowedListSpec: capsulev1beta2.AllowedListSpec{Exact: []string{icMine}}},
	}
	wind.Spec.PriorityClasses = &capsulev1beta2.DefaultAllowedListSpec{
		SelectorAllowedListSpec: capsulev1beta2.SelectorAllowedListSpec{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": pool}}},
	}
	wind.Spec.NodeSelector = map[string]string{"pool": pool + "-wind"}
	wind.Spec.StorageClasses = &capsulev1beta2.DefaultAllowedListSpec{
		SelectorAllowedListSpec: capsulev1beta2.SelectorAllowedListSpec{
			AllowedListSpec: capsulev1beta2.AllowedListSpec{Exact: []string{scFast}, Regex: "^" + pool + "-rx-"},
			LabelSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"tier": pool}},
		},
		Default: scDefault,
	}
	wind = createTenant(t, wind)
	windNS := uniq("cls-wind-ns")
	createTenantNamespace(t, wind, windNS, linkCapsule)
	// rules-owner2 owns solar: every node (no nodeSelector), List and Delete.
	solar := createTenant(t, newTenant(uniq("cls-solar"), userOwner("rules-owner2",
		kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation, capsulev1beta2.DeleteOperation))))
	solarNS := uniq("cls-solar-ns")
	createTenantNamespace(t, solar, solarNS, linkCapsule)
	pvWind, pvSolar := pool+"-pv-wind", pool+"-pv-solar"
	createBoundPV(t, pvWind, windNS)
	createBoundPV(t, pvSolar, solarNS)

	p := startGrantsTarget(t, grantsOptions{})

	t.Run("nodes by nodeSelector", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, "rules-owner", http.MethodGet, "/api/v1/nodes", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{windNode}) {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
		code, body := p.Do(t, "rules-owner", http.MethodGet, "/api/v1/nodes/"+solarNode, "", nil)
		expectCode(t, "get a node outside the selector", code, body, http.StatusNotFound)
		out, err := p.Kubectl(t, "rules-owner", "get", "nodes", "-o", "name")
		if err != nil || !strings.Contains(out, windNode) || strings.Contains(out, solarNode) {
			t.Fatalf("kubectl get nodes: %v: %s", err, out)
		}
	})

	t.Run("a tenant without nodeSelector sees every node", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, "rules-owner2", http.MethodGet, "/api/v1/nodes", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{solarNode, windNode}) {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
	})

	t.Run("Update: label, taint, cordon", func(t *testing.T) {
		if out, err := p.Kubectl(t, "rules-owner", "label", "node", windNode, "team="+pool); err != nil {
			t.Fatalf("kubectl label: %v: %s", err, out)
		}
		if out, err := p.Kubectl(t, "rules-owner", "taint", "node", windNode, "dedicated="+pool+":NoSchedule"); err != nil {
			t.Fatalf("kubectl taint: %v: %s", err, out)
		}
		if out, err := p.Kubectl(t, "rules-owner", "cordon", windNode); err != nil {
			t.Fatalf("kubectl cordon: %v: %s", err, out)
		}
		n, err := adminClientset().CoreV1().Nodes().Get(testCtx(t), windNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tainted := false
		for _, tn := range n.Spec.Taints {
			tainted = tainted || (tn.Key == "dedicated" && tn.Value == pool)
		}
		if n.Labels["team"] != pool || !n.Spec.Unschedulable || !tainted {
			t.Fatalf("node after label/taint/cordon: labels %v unschedulable %v taints %v", n.Labels, n.Spec.Unschedulable, n.Spec.Taints)
		}
		// Outside the selector: NotFound, and nothing changed.
		if out, err := p.Kubectl(t, "rules-owner", "label", "node", solarNode, "team="+pool); err == nil || !strings.Contains(err.Error(), "NotFound") && !strings.Contains(err.Error(), "not found") {
			t.Fatalf("kubectl label outside the grant: %v: %s", err, out)
		}
		// No Delete grant: forwarded impersonated, and RBAC says no.
		if out, err := p.Kubectl(t, "rules-owner", "delete", "node", windNode, "--dry-run=server"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Fatalf("kubectl delete without a Delete grant: %v: %s", err, out)
		}
	})

	t.Run("Delete with dry-run", func(t *testing.T) {
		out, err := p.Kubectl(t, "rules-owner2", "delete", "node", solarNode, "--dry-run=server")
		if err != nil || !strings.Contains(out, "deleted (server dry run)") {
			t.Fatalf("kubectl delete --dry-run=server: %v: %s", err, out)
		}
		if _, err := adminClientset().CoreV1().Nodes().Get(testCtx(t), solarNode, metav1.GetOptions{}); err != nil {
			t.Fatalf("the dry run deleted the node: %v", err)
		}
		// No Update grant for rules-owner2.
		patch := http.Header{"Content-Type": {"application/merge-patch+json"}}
		code, body := p.Do(t, "rules-owner2", http.MethodPatch, "/api/v1/nodes/"+solarNode, `{"metadata":{"labels":{"x":"y"}}}`, patch)
		expectCode(t, "patch without an Update grant", code, body, http.StatusForbidden)
	})

	t.Run("storage classes by name, default, regexp and labels", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, "rules-owner", http.MethodGet, "/apis/storage.k8s.io/v1/storageclasses", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			want := fmt.Sprint([]string{scFast, scLabel, scRegex, scDefault})
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != want {
				return fmt.Errorf("list = %v, want %v", got, want)
			}
			return nil
		})
		code, body := p.Do(t, "rules-owner", http.MethodGet, "/apis/storage.k8s.io/v1/storageclasses/"+scOther, "", nil)
		expectCode(t, "get a class outside the list", code, body, http.StatusNotFound)
		if st := status(t, body); st.Message != fmt.Sprintf("storageclasses.storage.k8s.io %q not found", scOther) {
			t.Fatalf("404 message: %q", st.Message)
		}
		out, err := p.Kubectl(t, "rules-owner", "get", "storageclasses")
		if err != nil || !strings.Contains(out, scFast) || strings.Contains(out, scOther) || !strings.Contains(out, "PROVISIONER") {
			t.Fatalf("kubectl get storageclasses: %v: %s", err, out)
		}
	})

	t.Run("ingress classes with Delete, priority classes by labels", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, "rules-owner", http.MethodGet, "/apis/networking.k8s.io/v1/ingressclasses", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{icMine}) {
				return fmt.Errorf("ingress classes = %v", got)
			}
			return nil
		})
		out, err := p.Kubectl(t, "rules-owner", "delete", "ingressclass", icMine, "--dry-run=server")
		if err != nil || !strings.Contains(out, "deleted (server dry run)") {
			t.Fatalf("kubectl delete ingressclass --dry-run=server: %v: %s", err, out)
		}
		if _, err := p.Kubectl(t, "rules-owner", "delete", "ingressclass", icOther, "--dry-run=server"); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("delete outside the grant: %v", err)
		}
		code, body := p.Do(t, "rules-owner", http.MethodGet, "/apis/scheduling.k8s.io/v1/priorityclasses", "", nil)
		expectCode(t, "list priority classes", code, body, http.StatusOK)
		if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{pcMine}) {
			t.Fatalf("priority classes = %v", got)
		}
	})

	t.Run("persistent volumes bound into the tenant", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, "rules-owner", http.MethodGet, "/api/v1/persistentvolumes", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{pvWind}) {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
		out, err := p.Kubectl(t, "rules-owner", "get", "pv", "-o", "name")
		if err != nil || !strings.Contains(out, pvWind) || strings.Contains(out, pvSolar) {
			t.Fatalf("kubectl get pv: %v: %s", err, out)
		}
	})

	t.Run("describe node routes", func(t *testing.T) {
		pods := "/api/v1/pods?fieldSelector=" + "spec.nodeName%3D" + windNode + "%2Cstatus.phase%21%3DFailed"
		code, body := p.Do(t, "rules-owner", http.MethodGet, pods, "", nil)
		expectCode(t, "pods on a visible node", code, body, http.StatusOK)
		code, body = p.Do(t, "rules-owner", http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"+windNode, "", nil)
		expectCode(t, "lease of a visible node", code, body, http.StatusOK)
		code, body = p.Do(t, "rules-owner", http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3D"+solarNode, "", nil)
		expectCode(t, "pods on an invisible node", code, body, http.StatusForbidden)
		code, body = p.Do(t, "rules-owner", http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"+solarNode, "", nil)
		expectCode(t, "lease of an invisible node", code, body, http.StatusForbidden)
		// Every pod, without a node: not this route.
		code, body = p.Do(t, "rules-owner", http.MethodGet, "/api/v1/pods", "", nil)
		expectCode(t, "all pods", code, body, http.StatusForbidden)
		out, err := p.Kubectl(t, "rules-owner", "describe", "node", windNode)
		if err != nil || !strings.Contains(out, "Name:") || !strings.Contains(out, windNode) {
			t.Fatalf("kubectl describe node: %v: %s", err, out)
		}
	})

	t.Run("other callers keep the downstream's RBAC", func(t *testing.T) {
		code, body := p.Do(t, "rules-viewer", http.MethodGet, "/api/v1/nodes", "", nil)
		expectCode(t, "a tenant user without grants", code, body, http.StatusForbidden)
		code, body = p.Do(t, "rules-outsider", http.MethodGet, "/api/v1/nodes/"+windNode, "", nil)
		expectCode(t, "not a tenant user", code, body, http.StatusForbidden)
	})

	t.Run("still on with ProxyClusterScoped", func(t *testing.T) {
		on := startGrantsTarget(t, grantsOptions{ClusterScoped: true})
		eventually(t, time.Minute, func() error {
			code, body := on.Do(t, "rules-owner", http.MethodGet, "/api/v1/nodes", "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{windNode}) {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
	})
}
