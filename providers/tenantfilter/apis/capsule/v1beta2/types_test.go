package v1beta2

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A Tenant as Capsule's documentation writes it decodes into our types and
// encodes back without losing the fields the filter reads or the ones it
// keeps verbatim.
func TestTenantJSONCompatible(t *testing.T) {
	in := `{"apiVersion":"capsule.clastix.io/v1beta2","kind":"Tenant","metadata":{"name":"wind"},
"spec":{"owners":[{"kind":"User","name":"alice","clusterRoles":["admin"],"proxySettings":[{"kind":"Nodes","operations":["List","Update"]}]}],
"nodeSelector":{"pool":"wind"},
"storageClasses":{"allowed":["fast"],"allowedRegex":"^wind-.*$","default":"fast","matchLabels":{"env":"prod"}},
"ingressOptions":{"allowedClasses":{"allowed":["nginx"],"matchExpressions":[{"key":"tier","operator":"In","values":["a"]}]},"hostnameCollisionScope":"Tenant"},
"namespaceOptions":{"quota":3},
"resourceQuotas":{"scope":"Tenant","items":[{"hard":{"pods":"10"}}]},
"cordoned":true},
"status":{"state":"Active","size":1,"namespaces":["wind-a"]}}`
	var tnt Tenant
	if err := json.Unmarshal([]byte(in), &tnt); err != nil {
		t.Fatal(err)
	}
	sc := tnt.Spec.StorageClasses
	if sc == nil || sc.Default != "fast" || sc.Regex != "^wind-.*$" || sc.Exact[0] != "fast" || sc.MatchLabels["env"] != "prod" {
		t.Fatalf("storageClasses decoded as %+v", sc)
	}
	if ic := tnt.Spec.IngressOptions.AllowedClasses; ic == nil || ic.MatchExpressions[0].Key != "tier" {
		t.Fatalf("ingress classes decoded as %+v", ic)
	}
	if o := tnt.Spec.Owners[0]; o.Kind != UserOwner || o.ProxyOperations[0].Operations[1] != UpdateOperation {
		t.Fatalf("owner decoded as %+v", o)
	}
	if *tnt.Spec.NamespaceOptions.Quota != 3 || !tnt.Spec.Cordoned || tnt.Status.Size != 1 {
		t.Fatalf("decoded %+v", tnt)
	}
	out, err := json.Marshal(&tnt)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	_ = json.Unmarshal([]byte(in), &a)
	_ = json.Unmarshal(out, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip changed the object:\n in %v\nout %v", a, b)
	}
	cp := tnt.DeepCopy()
	cp.Spec.Owners[0].Name = "mallory"
	if tnt.Spec.Owners[0].Name != "alice" {
		t.Fatal("DeepCopy shares owners")
	}
}

func TestMergedUsers(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec CapsuleConfigurationSpec
		want []UserSpec
	}{
		{"empty", CapsuleConfigurationSpec{}, nil},
		{"legacy groups", CapsuleConfigurationSpec{UserGroups: []string{"projectcapsule.dev"}},
			[]UserSpec{{Kind: GroupOwner, Name: "projectcapsule.dev"}}},
		{"merged, dedup, sorted", CapsuleConfigurationSpec{
			Users:      []UserSpec{{Kind: UserOwner, Name: "zed"}, {Kind: GroupOwner, Name: "g"}, {Kind: UserOwner, Name: ""}},
			UserNames:  []string{"alice", "zed"},
			UserGroups: []string{"g"},
		}, []UserSpec{{GroupOwner, "g"}, {UserOwner, "alice"}, {UserOwner, "zed"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.MergedUsers(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}
