package core

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

func TestNodeNameSelected(t *testing.T) {
	tests := []struct {
		selector, want string
	}{
		{"spec.nodeName=n1", "n1"},
		{"spec.nodeName==n1", "n1"},
		// kubectl describe node adds phase conditions: they only narrow.
		{"spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded", "n1"},
		{"spec.nodeName!=n1", ""},
		{"spec.nodeName=n1,spec.nodeName=n2", ""},
		{"status.phase!=Failed", ""},
		{"", ""},
		{"spec.nodeName", ""},
	}
	for _, tt := range tests {
		if got := nodeNameSelected(tt.selector); got != tt.want {
			t.Errorf("nodeNameSelected(%q) = %q, want %q", tt.selector, got, tt.want)
		}
	}
}

func TestFieldsMatch(t *testing.T) {
	node := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "n1"},
		"spec":     map[string]any{"unschedulable": true},
	}}
	tests := []struct {
		selector string
		want     bool
	}{
		{"", true},
		{"metadata.name=n1", true},
		{"metadata.name=n2", false},
		{"metadata.name!=n1", false},
		{"spec.unschedulable=true", true},
		{"spec.unschedulable=false", false},
		{"spec.providerID=", true},
	}
	for _, tt := range tests {
		sel, err := fields.ParseSelector(tt.selector)
		if err != nil {
			t.Fatal(err)
		}
		if got := fieldsMatch(sel, node); got != tt.want {
			t.Errorf("fieldsMatch(%q) = %v, want %v", tt.selector, got, tt.want)
		}
	}
}

func TestRuleObjectReadsClaimRef(t *testing.T) {
	pv := &unstructured.Unstructured{Object: map[string]any{
		"kind":     "PersistentVolume",
		"metadata": map[string]any{"name": "pv1", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"claimRef": map[string]any{"namespace": "wind-a", "name": "data"}},
	}}
	o := ruleObject(pv)
	if o.Name != "pv1" || o.Labels["a"] != "b" || o.ClaimNamespace != "wind-a" {
		t.Fatalf("ruleObject = %+v", o)
	}
}
