package resourcequota

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func rq(name string, hard, used map[string]string) *corev1.ResourceQuota {
	l := func(m map[string]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.ResourceQuotaStatus{Hard: l(hard), Used: l(used)}}
}

func TestCharge(t *testing.T) {
	cm := NamesOf(schema.GroupResource{Resource: "configmaps"})
	widgets := NamesOf(schema.GroupResource{Group: "example.com", Resource: "widgets"})
	tests := []struct {
		name    string
		quotas  []*corev1.ResourceQuota
		names   []corev1.ResourceName
		wantErr string
		// wantUsed: quota name -> resource -> used after the charge.
		wantUsed map[string]map[string]int64
	}{
		{name: "no quota", names: cm},
		{name: "quota of other resources", quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"count/secrets": "1"}, map[string]string{"count/secrets": "1"})}, names: cm},
		{
			name:     "room left",
			quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"count/configmaps": "2"}, map[string]string{"count/configmaps": "1"})},
			names:    cm,
			wantUsed: map[string]map[string]int64{"q": {"count/configmaps": 2}},
		},
		{
			name:    "at the limit",
			quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"count/configmaps": "2"}, map[string]string{"count/configmaps": "2"})},
			names:   cm,
			wantErr: "exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2",
		},
		{
			name:    "legacy name",
			quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"configmaps": "0"}, map[string]string{"configmaps": "0"})},
			names:   cm,
			wantErr: "exceeded quota: q, requested: configmaps=1, used: configmaps=0, limited: configmaps=0",
		},
		{
			name:    "both names exceeded, sorted",
			quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"configmaps": "1", "count/configmaps": "1"}, map[string]string{"configmaps": "1", "count/configmaps": "1"})},
			names:   cm,
			wantErr: "exceeded quota: q, requested: configmaps=1,count/configmaps=1, used: configmaps=1,count/configmaps=1, limited: configmaps=1,count/configmaps=1",
		},
		{
			name: "one of two quotas full: first by name refuses",
			quotas: []*corev1.ResourceQuota{
				rq("b", map[string]string{"count/configmaps": "1"}, map[string]string{"count/configmaps": "1"}),
				rq("a", map[string]string{"count/configmaps": "5"}, map[string]string{"count/configmaps": "1"}),
			},
			names:   cm,
			wantErr: "exceeded quota: b, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1",
		},
		{
			name: "every matching quota charged",
			quotas: []*corev1.ResourceQuota{
				rq("a", map[string]string{"count/configmaps": "5"}, map[string]string{"count/configmaps": "1"}),
				rq("b", map[string]string{"configmaps": "3", "count/secrets": "1"}, map[string]string{"configmaps": "0", "count/secrets": "1"}),
			},
			names:    cm,
			wantUsed: map[string]map[string]int64{"a": {"count/configmaps": 2}, "b": {"configmaps": 1, "count/secrets": 1}},
		},
		{
			name:    "custom resource",
			quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"count/widgets.example.com": "1"}, map[string]string{"count/widgets.example.com": "1"})},
			names:   widgets,
			wantErr: "exceeded quota: q, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1",
		},
		{
			name:   "custom resource not matched by its bare plural",
			quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"count/widgets": "0"}, map[string]string{"count/widgets": "0"})},
			names:  widgets,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, err := Charge(tt.quotas, tt.names)
			var ex *Exceeded
			switch {
			case tt.wantErr != "":
				if !errors.As(err, &ex) || err.Error() != tt.wantErr {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("unexpected %v", err)
			}
			if len(changed) != len(tt.wantUsed) {
				t.Fatalf("changed %d quotas, want %d", len(changed), len(tt.wantUsed))
			}
			for _, q := range changed {
				for n, want := range tt.wantUsed[q.Name] {
					got := q.Status.Used[corev1.ResourceName(n)]
					if got.Value() != want {
						t.Errorf("%s used %s = %s, want %d", q.Name, n, got.String(), want)
					}
				}
			}
			for _, q := range tt.quotas {
				if q.Name == "a" && q.Status.Used.Name("count/configmaps", resource.DecimalSI).Value() != 1 {
					t.Errorf("input quota changed")
				}
			}
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		gr   schema.GroupResource
		want []corev1.ResourceName
	}{
		{schema.GroupResource{Resource: "configmaps"}, []corev1.ResourceName{"count/configmaps", "configmaps"}},
		{schema.GroupResource{Resource: "serviceaccounts"}, []corev1.ResourceName{"count/serviceaccounts"}},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, []corev1.ResourceName{"count/roles.rbac.authorization.k8s.io"}},
	}
	for _, tt := range tests {
		got := NamesOf(tt.gr)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %v, want %v", tt.gr, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: %v, want %v", tt.gr, got, tt.want)
			}
			if back, ok := ResourceOf(got[i]); !ok || back != tt.gr {
				t.Errorf("ResourceOf(%s) = %v %v, want %v", got[i], back, ok, tt.gr)
			}
		}
	}
	for _, n := range []corev1.ResourceName{"cpu", "requests.memory", "services.nodeports", "count/"} {
		if gr, ok := ResourceOf(n); ok {
			t.Errorf("ResourceOf(%s) = %v, want none", n, gr)
		}
	}
}
