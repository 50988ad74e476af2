package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResourceQuota(t *testing.T) {
	tests := []struct {
		name string
		hard map[string]string
		// want is a substring of the one expected error; "" means valid.
		want   string
		scopes []corev1.ResourceQuotaScope
	}{
		{name: "count of core resource", hard: map[string]string{"count/configmaps": "2"}},
		{name: "count of custom resource", hard: map[string]string{"count/widgets.example.com": "10"}},
		{name: "legacy names", hard: map[string]string{"configmaps": "1", "secrets": "0", "resourcequotas": "1", "pods": "3"}},
		{name: "compute resource", hard: map[string]string{"requests.cpu": "500m", "memory": "1Gi"}},
		{name: "fractional count", hard: map[string]string{"count/configmaps": "1500m"}, want: `spec.hard[count/configmaps]: Invalid value: "1500m": must be an integer`},
		{name: "fractional legacy count", hard: map[string]string{"secrets": "0.5"}, want: "must be an integer"},
		{name: "negative", hard: map[string]string{"count/configmaps": "-1"}, want: "must be greater than or equal to 0"},
		{name: "unknown bare name", hard: map[string]string{"widgets": "1"}, want: "must be a standard resource for quota"},
		{name: "not a qualified name", hard: map[string]string{"count/a b": "1"}, want: "spec.hard[count/a b]"},
		{name: "scopes", hard: map[string]string{"count/configmaps": "1"}, scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, want: "spec.scopes: Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}, Scopes: tt.scopes}}
			for k, v := range tt.hard {
				q.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
			}
			errs := ResourceQuota(q)
			if tt.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected %v", errs.ToAggregate())
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.want) {
				t.Fatalf("got %v, want %q", errs.ToAggregate(), tt.want)
			}
		})
	}
}
