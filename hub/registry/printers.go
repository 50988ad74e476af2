package registry

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The tables below are what kube-apiserver v1.37 answers for
// Accept: application/json;as=Table;v=v1;g=meta.k8s.io, column for column
// (name, type, format, priority, description) and cell for cell, so that
// kubectl get prints the same in a workspace as against a cluster. The
// upstream printers live in k8s.io/kubernetes, which the hub cannot
// import; the descriptions come from the same API documentation strings
// (SwaggerDoc) upstream reads. Upstream always renders the wide columns
// (priority 1); kubectl hides them unless -o wide.

var (
	objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()
	nameColumn    = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
	ageColumn     = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
	// createdAtColumn is the second column of Roles and ClusterRoles.
	createdAtColumn = metav1.TableColumnDefinition{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]}
)

var configMapTable = Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
		ageColumn,
	},
	Cells: func(obj runtime.Object) []interface{} {
		cm := obj.(*corev1.ConfigMap)
		// binaryData counts too, as upstream.
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), Age(cm.CreationTimestamp)}
	},
}

var secretTable = Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		ageColumn,
	},
	Cells: func(obj runtime.Object) []interface{} {
		s := obj.(*corev1.Secret)
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), Age(s.CreationTimestamp)}
	},
}

var namespaceTable = Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"},
		ageColumn,
	},
	Cells: func(obj runtime.Object) []interface{} {
		ns := obj.(*corev1.Namespace)
		return []interface{}{ns.Name, string(ns.Status.Phase), Age(ns.CreationTimestamp)}
	},
}

// serviceAccountTable: kube-apiserver v1.37 prints no SECRETS column any
// more (secrets of ServiceAccounts are deprecated), only name and age.
var serviceAccountTable = Table{
	Columns: []metav1.TableColumnDefinition{nameColumn, ageColumn},
	Cells: func(obj runtime.Object) []interface{} {
		sa := obj.(*corev1.ServiceAccount)
		return []interface{}{sa.Name, Age(sa.CreationTimestamp)}
	},
}

var leaseTable = Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageColumn,
	},
	Cells: func(obj runtime.Object) []interface{} {
		l := obj.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, Age(l.CreationTimestamp)}
	},
}

// roleTable serves Roles and ClusterRoles: upstream prints the creation
// time as an RFC 3339 date, not an age.
var roleTable = Table{
	Columns: []metav1.TableColumnDefinition{nameColumn, createdAtColumn},
	Cells: func(obj runtime.Object) []interface{} {
		m := obj.(metav1.Object)
		return []interface{}{m.GetName(), createdAt(m.GetCreationTimestamp())}
	},
}

func createdAt(t metav1.Time) string { return t.UTC().Format(time.RFC3339) }

// bindingColumns are the columns of RoleBindings (what "roleBinding") or
// ClusterRoleBindings; upstream takes the Role column's description from
// the v1beta1 types.
func bindingColumns(what, roleRefDoc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Role", Type: "string", Description: roleRefDoc},
		ageColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

var roleBindingTable = Table{
	Columns: bindingColumns("roleBinding", rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"]),
	Cells: func(obj runtime.Object) []interface{} {
		b := obj.(*rbacv1.RoleBinding)
		return bindingCells(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp)
	},
}

var clusterRoleBindingTable = Table{
	Columns: bindingColumns("clusterRoleBinding", rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
	Cells: func(obj runtime.Object) []interface{} {
		b := obj.(*rbacv1.ClusterRoleBinding)
		return bindingCells(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp)
	},
}

func bindingCells(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []interface{}{name, fmt.Sprintf("%s/%s", ref.Kind, ref.Name), Age(created),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
