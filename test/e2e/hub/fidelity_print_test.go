package hub

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 12 item 1: server-side printing. kubectl get asks for a Table; the
// hub must answer with kube-apiserver's columns (name, type, format,
// priority, description) and cells for every built-in kind it serves.

// tableAccept asks for server-side printing, as kubectl get does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// rfc3339 matches the Created At cells of Roles and ClusterRoles, which
// differ between the two sides only by when the object was made.
var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// createdAtColumn normalizes kubectl output with a Created At column.
func createdAtColumn(s string) string { return AgeColumn(rfc3339.ReplaceAllString(s, "<date>")) }

// everyAge normalizes kubectl output whose AGE is not the last column
// (-o wide of bindings): every field that looks like an age.
func everyAge(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		fields := strings.Fields(line)
		for i, f := range fields {
			if looksLikeAge(f) {
				fields[i] = "<age>"
			}
		}
		out = append(out, strings.Join(fields, " "))
	}
	return strings.Join(out, "\n")
}

// sameTable fetches path as a Table from both sides and fails unless the
// column definitions are identical and the cells agree, Age cells aside
// (both must be ages) and Created At cells aside (both must be RFC 3339).
func (f *fidelity) sameTable(t *testing.T, path string) {
	t.Helper()
	h, k := f.Both(t, fidReq{Path: path, Accept: tableAccept})
	if h.Code != 200 || k.Code != 200 {
		t.Fatalf("GET %s as Table: hub %s, kube %s", path, h, k)
	}
	var ht, kt metav1.Table
	if err := json.Unmarshal([]byte(h.Body), &ht); err != nil {
		t.Fatalf("hub table: %v", err)
	}
	if err := json.Unmarshal([]byte(k.Body), &kt); err != nil {
		t.Fatalf("kube table: %v", err)
	}
	if !reflect.DeepEqual(ht.ColumnDefinitions, kt.ColumnDefinitions) {
		t.Errorf("GET %s column definitions:\n  hub:  %+v\n  kube: %+v", path, ht.ColumnDefinitions, kt.ColumnDefinitions)
	}
	if len(ht.Rows) != len(kt.Rows) {
		t.Fatalf("GET %s: hub %d rows, kube %d rows", path, len(ht.Rows), len(kt.Rows))
	}
	for i := range ht.Rows {
		hc, kc := normCells(t, kt.ColumnDefinitions, ht.Rows[i].Cells), normCells(t, kt.ColumnDefinitions, kt.Rows[i].Cells)
		if !reflect.DeepEqual(hc, kc) {
			t.Errorf("GET %s row %d:\n  hub:  %#v\n  kube: %#v", path, i, hc, kc)
		}
	}
}

func normCells(t *testing.T, cols []metav1.TableColumnDefinition, cells []interface{}) []interface{} {
	t.Helper()
	out := append([]interface{}(nil), cells...)
	for i := range out {
		if i >= len(cols) {
			break
		}
		s, _ := out[i].(string)
		switch cols[i].Name {
		case "Age":
			if !looksLikeAge(s) {
				t.Errorf("Age cell %q", s)
			}
			out[i] = "<age>"
		case "Created At":
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				t.Errorf("Created At cell %q: %v", s, err)
			}
			out[i] = "<date>"
		}
	}
	return out
}

func init() {
	registerFidelity("01-print/builtin", func(t *testing.T, f *fidelity) {
		ns := f.unique("print")
		cr, crb := f.unique("print-role"), f.unique("print-binding")
		f.MustBoth(t, fmt.Sprintf(printManifest, ns, cr, crb))
		for _, res := range []string{"configmaps", "secrets", "serviceaccounts"} {
			f.sameTable(t, "/api/v1/namespaces/"+ns+"/"+res)
			f.sameTable(t, "/api/v1/namespaces/"+ns+"/"+res+"/one")
		}
		f.sameTable(t, "/api/v1/namespaces/"+ns)
		for _, res := range []string{"roles", "rolebindings"} {
			f.sameTable(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/"+res)
		}
		f.sameTable(t, "/apis/rbac.authorization.k8s.io/v1/clusterroles/"+cr)
		f.sameTable(t, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"+crb)
		f.sameTable(t, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases")

		for _, wide := range [][]string{nil, {"-o", "wide"}} {
			for _, res := range []string{"configmaps", "secrets", "serviceaccounts", "rolebindings", "leases"} {
				f.SameKubectl(t, everyAge, "", append([]string{"get", res, "-n", ns}, wide...)...)
			}
			f.SameKubectl(t, createdAtColumn, "", append([]string{"get", "roles", "-n", ns}, wide...)...)
			f.SameKubectl(t, AgeColumn, "", append([]string{"get", "namespace", ns}, wide...)...)
			f.SameKubectl(t, createdAtColumn, "", append([]string{"get", "clusterrole", cr}, wide...)...)
			f.SameKubectl(t, everyAge, "", append([]string{"get", "clusterrolebinding", crb}, wide...)...)
		}
		// No headers: the columns are still the same, the definitions gone.
		f.SameKubectl(t, AgeColumn, "", "get", "configmaps", "-n", ns, "--no-headers")
	})
}

// printManifest: one of each kind, with cells that are not all empty
// (binaryData counts in DATA, every subject kind in the wide columns, a
// Lease with and one without a holder). Arguments: namespace, ClusterRole
// and ClusterRoleBinding names.
const printManifest = `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: %[1]s}
data: {a: "1", b: "2"}
binaryData: {c: AAE=}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: %[1]s}
---
apiVersion: v1
kind: Secret
metadata: {name: one, namespace: %[1]s}
type: kubernetes.io/tls
data: {tls.crt: AAE=, tls.key: AAE=}
---
apiVersion: v1
kind: Secret
metadata: {name: two, namespace: %[1]s}
stringData: {x: "z"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: one, namespace: %[1]s}
secrets: [{name: a}, {name: b}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: %[1]s}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
- {kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}
- {kind: Group, name: team, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: one, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: nobody, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[2]s}
rules: [{apiGroups: [""], resources: [namespaces], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[3]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[2]s}
subjects:
- {kind: Group, name: team, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: one, namespace: %[1]s}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: held, namespace: %[1]s}
spec: {holderIdentity: replica-a, leaseDurationSeconds: 15}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: free, namespace: %[1]s}
spec: {}
`
