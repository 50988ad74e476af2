package fairness

import "testing"

func TestNewLimits(t *testing.T) {
	for _, tt := range []struct {
		name            string
		ro, mut         int
		fraction        float64
		wantRO, wantMut int
	}{
		{"defaults", 400, 200, 0.1, 40, 20},
		{"rounds up", 10, 5, 0.25, 3, 2},
		{"at least one slot", 3, 3, 0.01, 1, 1},
		{"whole budget", 400, 200, 1, 400, 200},
		{"no limit stays no limit", 0, 0, 0.1, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimits(tt.ro, tt.mut, tt.fraction)
			if l.TenantReadOnly != tt.wantRO || l.TenantMutating != tt.wantMut {
				t.Fatalf("shares %d/%d, want %d/%d", l.TenantReadOnly, l.TenantMutating, tt.wantRO, tt.wantMut)
			}
		})
	}
}
