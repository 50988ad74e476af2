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

// op is one step of a limiter scenario: acquire (release false) or
// release the n-th held slot.
type op struct {
	tenant  string
	kind    Kind
	release int // index into held, or -1 to acquire
	want    bool
}

func TestLimiter(t *testing.T) {
	limits := Limits{ReadOnly: 3, Mutating: 2, TenantReadOnly: 2, TenantMutating: 1}
	acq := func(tenant string, k Kind, want bool) op { return op{tenant: tenant, kind: k, release: -1, want: want} }
	rel := func(i int) op { return op{release: i} }
	for _, tt := range []struct {
		name string
		ops  []op
	}{
		{"a tenant's share", []op{acq("a", Mutating, true), acq("a", Mutating, false), acq("b", Mutating, true)}},
		{"kinds are separate", []op{acq("a", Mutating, true), acq("a", ReadOnly, true), acq("a", ReadOnly, true), acq("a", ReadOnly, false)}},
		{"hub-wide budget", []op{acq("a", ReadOnly, true), acq("b", ReadOnly, true), acq("c", ReadOnly, true), acq("d", ReadOnly, false)}},
		{"release frees the slot", []op{acq("a", Mutating, true), acq("a", Mutating, false), rel(0), acq("a", Mutating, true)}},
		{"release frees the hub-wide slot", []op{acq("a", Mutating, true), acq("b", Mutating, true), acq("c", Mutating, false), rel(1), acq("c", Mutating, true)}},
		{"release twice counts once", []op{acq("a", Mutating, true), acq("b", Mutating, true), rel(0), rel(0), acq("c", Mutating, true), acq("d", Mutating, false)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimiter(limits)
			var held []func()
			for i, o := range tt.ops {
				if o.release >= 0 {
					held[o.release]()
					continue
				}
				release, ok := l.Acquire(o.tenant, o.kind)
				if ok != o.want {
					t.Fatalf("op %d: Acquire(%s, %d) = %v, want %v", i, o.tenant, o.kind, ok, o.want)
				}
				if ok {
					held = append(held, release)
				}
			}
			for _, r := range held {
				r()
			}
			for _, k := range []Kind{ReadOnly, Mutating} {
				if total, _ := l.InFlight("a", k); total != 0 {
					t.Fatalf("kind %d: %d in flight after every release", k, total)
				}
			}
			if len(l.tenants) != 0 {
				t.Fatalf("tenants kept after every release: %v", l.tenants)
			}
		})
	}
}

func TestLimiterNoLimit(t *testing.T) {
	l := NewLimiter(NewLimits(0, 0, 0.1))
	for i := 0; i < 1000; i++ {
		if _, ok := l.Acquire("a", Mutating); !ok {
			t.Fatalf("request %d refused without a limit", i)
		}
	}
}
