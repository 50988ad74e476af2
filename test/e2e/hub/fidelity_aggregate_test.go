package hub

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 12 item 11: aggregated ClusterRoles show their aggregated rules in
// .rules, as kube-controller-manager's clusterrole-aggregation controller
// writes them. The fixture's kube-apiserver runs no controller manager, so
// its aggregated roles keep whatever .rules were sent: a side-by-side
// comparison is impossible. The checks hold the hub to upstream's
// documented behaviour instead (.rules is the union of the rules of every
// ClusterRole a selector matches, kept up to date as those change) and to
// the hub's own authorization result.

type clusterRoleDoc struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Rules           []json.RawMessage `json:"rules"`
	AggregationRule *struct {
		ClusterRoleSelectors []struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"clusterRoleSelectors"`
	} `json:"aggregationRule"`
}

// ruleSet renders rules as a sorted set of canonical JSON strings, for an
// order-insensitive comparison (upstream's order is that of the matched
// roles, which neither side promises).
func ruleSet(t *testing.T, rules []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, r := range rules {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if !slices.Contains(out, string(b)) {
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}

func (f *fidelity) hubClusterRoles(t *testing.T) map[string]clusterRoleDoc {
	t.Helper()
	out, err := f.HubKubectl("", "get", "clusterroles", "-o", "json")
	if err != nil {
		t.Fatalf("hub: %v: %s", err, out)
	}
	var list struct {
		Items []clusterRoleDoc `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	m := map[string]clusterRoleDoc{}
	for _, cr := range list.Items {
		m[cr.Metadata.Name] = cr
	}
	return m
}

// expectedAggregate is upstream's definition: the union of the rules of
// every other ClusterRole some selector of name matches.
func expectedAggregate(t *testing.T, roles map[string]clusterRoleDoc, name string) []string {
	t.Helper()
	var rules []json.RawMessage
	for other, cr := range roles {
		if other == name || cr.AggregationRule != nil {
			continue
		}
		for _, sel := range roles[name].AggregationRule.ClusterRoleSelectors {
			match := true
			for k, v := range sel.MatchLabels {
				if cr.Metadata.Labels[k] != v {
					match = false
				}
			}
			if match {
				rules = append(rules, cr.Rules...)
				break
			}
		}
	}
	return ruleSet(t, rules)
}

// eventuallyAggregated polls until the hub's stored .rules of name are
// the union of what its selectors match.
func (f *fidelity) eventuallyAggregated(t *testing.T, name string) []string {
	t.Helper()
	var got, want []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		roles := f.hubClusterRoles(t)
		if roles[name].AggregationRule == nil {
			t.Fatalf("%s is not aggregated on the hub", name)
		}
		got, want = ruleSet(t, roles[name].Rules), expectedAggregate(t, roles, name)
		if len(want) > 0 && slices.Equal(got, want) {
			return got
		}
	}
	t.Fatalf("clusterrole %s rules:\n  got:  %v\n  want: %v", name, got, want)
	return nil
}

func init() {
	registerFidelity("11-aggregate/default-roles", func(t *testing.T, f *fidelity) {
		for _, name := range []string{"admin", "edit", "view"} {
			f.eventuallyAggregated(t, name)
		}
		// kubectl shows them as kube would once its controller ran.
		out, err := f.HubKubectl("", "get", "clusterrole", "view", "-o", "yaml")
		if err != nil || !strings.Contains(out, "configmaps") {
			t.Errorf("kubectl get clusterrole view -o yaml: %v\n%s", err, out)
		}
	})

	registerFidelity("11-aggregate/custom-selector", func(t *testing.T, f *fidelity) {
		agg, label := f.unique("agg"), f.unique("example.com/agg")
		manifest := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {%[2]s: "true"}
rules:
- {apiGroups: ["tenant.example.com"], resources: ["smuggled"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s-cm, labels: {%[2]s: "true"}}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s-secrets, labels: {%[2]s: "true"}}
rules:
- {apiGroups: [""], resources: ["secrets"], verbs: ["get"]}
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s-other, labels: {%[2]s: "false"}}
rules:
- {apiGroups: [""], resources: ["namespaces"], verbs: ["delete"]}
`, agg, label)
		f.MustBoth(t, manifest)
		got := f.eventuallyAggregated(t, agg)
		if len(got) != 2 || strings.Contains(strings.Join(got, ","), "smuggled") || strings.Contains(strings.Join(got, ","), "namespaces") {
			t.Errorf("aggregated rules %v: want the two matched roles' rules, deduplicated, and nothing sent in .rules", got)
		}
		// The written-back rules are what the hub authorizes: alice bound
		// to the aggregated role may get secrets, not delete namespaces.
		if out, err := f.HubKubectl("", "create", "clusterrolebinding", agg+"-alice", "--clusterrole", agg, "--user", "alice"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for args, want := range map[string]string{"get secrets -A": "yes", "list configmaps -A": "yes", "delete namespaces": "no", "get smuggled.tenant.example.com -A": "no"} {
			out, _ := f.HubKubectl("alice", append([]string{"auth", "can-i"}, strings.Fields(args)...)...)
			if lines := strings.Split(out, "\n"); lines[len(lines)-1] != want {
				t.Errorf("alice can-i %s: %q, want %q", args, out, want)
			}
		}
		// Changes follow: a relabelled role leaves, a new rule arrives.
		if out, err := f.HubKubectl("", "label", "clusterrole", agg+"-secrets", label+"=false", "--overwrite"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if got := f.eventuallyAggregated(t, agg); len(got) != 1 {
			t.Errorf("after relabelling: %v", got)
		}
		// A client's write of .rules on an aggregated role is not kept (upstream's
		// controller overwrites it).
		if out, err := f.HubKubectl("", "patch", "clusterrole", agg, "--type=merge", "-p", `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if got := f.eventuallyAggregated(t, agg); len(got) != 1 {
			t.Errorf("after patching .rules: %v", got)
		}
	})
}
