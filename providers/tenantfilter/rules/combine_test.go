package rules

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ml(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func expr(key string, op metav1.LabelSelectorOperator, vals ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: vals}
}

func TestCombine(t *testing.T) {
	tests := []struct {
		name    string
		sels    []metav1.LabelSelector
		want    string // the merged selector's String(); "" with wantErr
		wantErr bool
	}{
		{"single", []metav1.LabelSelector{ml("tenant", "a")}, "tenant in (a)", false},
		{"identical", []metav1.LabelSelector{ml("tenant", "a"), ml("tenant", "a")}, "tenant in (a)", false},
		{"matchLabels equals In", []metav1.LabelSelector{ml("tenant", "a"), {MatchExpressions: []metav1.LabelSelectorRequirement{expr("tenant", metav1.LabelSelectorOpIn, "a")}}}, "tenant in (a)", false},
		{"values of one In merge", []metav1.LabelSelector{ml("tenant", "a"), ml("tenant", "b")}, "tenant in (a,b)", false},
		{"three way merge", []metav1.LabelSelector{ml("tenant", "a"), ml("tenant", "c"), {MatchExpressions: []metav1.LabelSelectorRequirement{expr("tenant", metav1.LabelSelectorOpIn, "b", "a")}}}, "tenant in (a,b,c)", false},
		{"merge with a shared rest", []metav1.LabelSelector{ml("tenant", "a", "zone", "x"), ml("tenant", "b", "zone", "x")}, "tenant in (a,b),zone in (x)", false},
		{"different keys", []metav1.LabelSelector{ml("tenant", "a"), ml("zone", "x")}, "", true},
		{"two requirements differ", []metav1.LabelSelector{ml("tenant", "a", "zone", "x"), ml("tenant", "b", "zone", "y")}, "", true},
		{"subset selector", []metav1.LabelSelector{ml("tenant", "a"), ml("tenant", "a", "zone", "x")}, "", true},
		{"negative requirement values differ", []metav1.LabelSelector{
			{MatchExpressions: []metav1.LabelSelectorRequirement{expr("tenant", metav1.LabelSelectorOpNotIn, "a")}},
			{MatchExpressions: []metav1.LabelSelectorRequirement{expr("tenant", metav1.LabelSelectorOpNotIn, "b")}},
		}, "", true},
		{"In vs Exists", []metav1.LabelSelector{ml("tenant", "a"), {MatchExpressions: []metav1.LabelSelectorRequirement{expr("tenant", metav1.LabelSelectorOpExists)}}}, "", true},
		{"empty selectors combine", []metav1.LabelSelector{{}, {}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var norms []normalized
			for _, s := range tt.sels {
				n, err := normalize(&s)
				if err != nil {
					t.Fatal(err)
				}
				norms = append(norms, n)
			}
			got, err := combine(norms)
			if tt.wantErr {
				if !errors.Is(err, ErrCannotCombine) {
					t.Fatalf("err = %v, want ErrCannotCombine (merged %v)", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sel, err := got.selector()
			if err != nil {
				t.Fatal(err)
			}
			if sel.String() != tt.want {
				t.Errorf("merged = %q, want %q", sel.String(), tt.want)
			}
		})
	}
}

func TestNormalizeRejectsInvalid(t *testing.T) {
	if _, err := normalize(nil); err == nil {
		t.Fatal("a missing selector must be an error")
	}
	_, err := normalize(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{expr("a", "Bogus", "x")}})
	if err == nil {
		t.Fatal("an invalid operator must be an error")
	}
}
