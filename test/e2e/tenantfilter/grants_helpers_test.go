package tenantfilter

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/test/kube"
)

// The grants scenarios' own users, so that their tenants and settings never
// change what other tests' users see.
func init() {
	for _, n := range []string{"rules-owner", "rules-owner2", "rules-owner-rev", "rules-owner-ps", "rules-viewer", "rules-g1", "rules-g2", "rules-g3", "rules-g4", "rules-g5", "rules-g6"} {
		testUsers = append(testUsers, kube.User{Name: n, Groups: []string{capsuleGroup}})
	}
	testUsers = append(testUsers, kube.User{Name: "rules-outsider", Groups: []string{"rules-plain"}})
}

func createNode(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := adminClientset().CoreV1().Nodes().Create(testCtx(t), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

func createStorageClass(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Provisioner: "example.com/none"}
	if _, err := adminClientset().StorageV1().StorageClasses().Create(testCtx(t), sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create storage class %s: %v", name, err)
	}
}

func createIngressClass(t testing.TB, name string) {
	t.Helper()
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/none"}}
	if _, err := adminClientset().NetworkingV1().IngressClasses().Create(testCtx(t), ic, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ingress class %s: %v", name, err)
	}
}

func createPriorityClass(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Value: 1000}
	if _, err := adminClientset().SchedulingV1().PriorityClasses().Create(testCtx(t), pc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create priority class %s: %v", name, err)
	}
}

func createBoundPV(t testing.TB, name, claimNamespace string) {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: claimNamespace, Name: "data"},
		},
	}
	if _, err := adminClientset().CoreV1().PersistentVolumes().Create(testCtx(t), pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pv %s: %v", name, err)
	}
}

func createNodeLease(t testing.TB, node string) {
	t.Helper()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"}}
	if _, err := adminClientset().CoordinationV1().Leases("kube-node-lease").Create(testCtx(t), l, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create lease %s: %v", node, err)
	}
}

func kindOps(kind capsulev1beta2.ProxyServiceKind, ops ...capsulev1beta2.ProxyOperation) capsulev1beta2.ProxySettings {
	return capsulev1beta2.ProxySettings{Kind: kind, Operations: ops}
}

// globalRule is one GlobalProxySettings rule for a user on one cluster
// resource.
func globalRule(user string, groups, resources []string, ops []capsulev1beta1.ClusterResourceOperation, sel map[string]string) capsulev1beta1.GlobalSubjectSpec {
	return capsulev1beta1.GlobalSubjectSpec{
		Subjects: []capsulev1beta1.GlobalSubject{{Kind: capsulev1beta2.UserOwner, Name: user}},
		ClusterResources: []capsulev1beta1.ClusterResource{{
			APIGroups: groups, Resources: resources, Operations: ops,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
		}},
	}
}

// listNames decodes a list answer's item names.
func listNames(t testing.TB, body string) []string {
	t.Helper()
	var l struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("decode list: %v: %s", err, body)
	}
	names := []string{}
	for _, i := range l.Items {
		names = append(names, i.Metadata.Name)
	}
	slices.Sort(names)
	return names
}

// only keeps the names with a prefix (other tests' objects share the
// cluster).
func only(names []string, prefix string) []string {
	out := []string{}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// status decodes a Status answer.
func status(t testing.TB, body string) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, body)
	}
	return st
}

// expectCode fails unless the answer has the code.
func expectCode(t testing.TB, what string, code int, body string, want int) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: %d, want %d: %s", what, code, want, body)
	}
}

func expectNames(t testing.TB, what string, got, want []string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

func pretty(v any) string {
	b, _ := json.Marshal(v)
	return fmt.Sprint(string(b))
}

func metaType(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: kind}
}
