package registry

import (
	"context"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestPrinters pins the cells of each built-in kind's Table; the e2e
// fidelity table (test/e2e/hub/fidelity_print_test.go) compares them and
// the column definitions with a real kube-apiserver.
func TestPrinters(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	meta := metav1.ObjectMeta{Name: "o", CreationTimestamp: created}
	holder := "h"
	age := Age(created)
	for _, tc := range []struct {
		name  string
		table Table
		obj   runtime.Object
		cells []interface{}
	}{
		{"configmap", configMapTable, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"b": nil}}, []interface{}{"o", int64(2), age}},
		{"secret", secretTable, &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"a": nil}}, []interface{}{"o", "kubernetes.io/tls", int64(1), age}},
		{"namespace", namespaceTable, &corev1.Namespace{ObjectMeta: meta, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, []interface{}{"o", "Terminating", age}},
		{"serviceaccount", serviceAccountTable, &corev1.ServiceAccount{ObjectMeta: meta, Secrets: []corev1.ObjectReference{{}, {}}}, []interface{}{"o", age}},
		{"lease", leaseTable, &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, []interface{}{"o", "h", age}},
		{"lease without holder", leaseTable, &coordinationv1.Lease{ObjectMeta: meta}, []interface{}{"o", "", age}},
		{"role", roleTable, &rbacv1.Role{ObjectMeta: meta}, []interface{}{"o", "2026-01-02T02:04:05Z"}},
		{"clusterrole", roleTable, &rbacv1.ClusterRole{ObjectMeta: meta}, []interface{}{"o", "2026-01-02T02:04:05Z"}},
		{"rolebinding", roleBindingTable, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "u1"}, {Kind: "Group", Name: "g"}, {Kind: "User", Name: "u2"}, {Kind: "ServiceAccount", Namespace: "n", Name: "s"},
		}}, []interface{}{"o", "Role/r", age, "u1, u2", "g", "n/s"}},
		{"clusterrolebinding", clusterRoleBindingTable, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "c"}}, []interface{}{"o", "ClusterRole/c", age, "", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := tc.table.ConvertToTable(context.Background(), tc.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tbl.ColumnDefinitions) != len(tc.cells) {
				t.Errorf("%d columns for %d cells", len(tbl.ColumnDefinitions), len(tc.cells))
			}
			if got := tbl.Rows[0].Cells; !reflect.DeepEqual(got, tc.cells) {
				t.Errorf("cells %#v, want %#v", got, tc.cells)
			}
			for _, c := range tbl.ColumnDefinitions {
				if c.Description == "" {
					t.Errorf("column %s has no description", c.Name)
				}
			}
		})
	}
}
