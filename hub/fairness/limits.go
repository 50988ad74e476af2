package fairness

import "math"

// Kind is the budget a request counts against.
type Kind int

const (
	// ReadOnly is get, list and watch, as upstream's max-in-flight filter.
	ReadOnly Kind = iota
	// Mutating is every other verb.
	Mutating
)

// Limits are the hub-wide budgets and each tenant's share of them. A
// budget of 0 means no limit, as upstream's flags.
type Limits struct {
	ReadOnly, Mutating             int
	TenantReadOnly, TenantMutating int
}

// NewLimits derives each tenant's share from the budgets: fraction of
// each, rounded up, at least one slot.
func NewLimits(readOnly, mutating int, fraction float64) Limits {
	share := func(total int) int {
		if total <= 0 {
			return 0
		}
		return max(1, int(math.Ceil(float64(total)*fraction)))
	}
	return Limits{ReadOnly: readOnly, Mutating: mutating, TenantReadOnly: share(readOnly), TenantMutating: share(mutating)}
}

// bounds are the hub-wide budget of kind k and each tenant's share of it.
func (l Limits) bounds(k Kind) (total, tenant int) {
	if k == Mutating {
		return l.Mutating, l.TenantMutating
	}
	return l.ReadOnly, l.TenantReadOnly
}
