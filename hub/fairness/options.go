package fairness

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Options are the in-flight budgets' flags. The first two are
// kube-apiserver's, with its defaults.
type Options struct {
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// TenantFraction is each tenant's share of each budget.
	TenantFraction float64
}

// NewOptions returns kube-apiserver's budgets and a tenth of each per
// tenant: ten tenants at their limit still leave the hub nothing to spare,
// but one alone leaves 90% to everybody else.
func NewOptions() *Options {
	return &Options{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200, TenantFraction: 0.1}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight,
		"Most non-mutating requests in flight at once, hub-wide (long-running ones not counted). 0 means no limit.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight,
		"Most mutating requests in flight at once, hub-wide (long-running ones not counted). 0 means no limit.")
	fs.Float64Var(&o.TenantFraction, "max-requests-inflight-tenant-fraction", o.TenantFraction,
		"Share of each in-flight budget one tenant (a person's home tree, or a top-level workspace tree) may use, in (0,1]. "+
			"Also bounds each tenant's concurrent provider-route requests. Hub administrators are not limited.")
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	var errs []error
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight must not be negative"))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-mutating-requests-inflight must not be negative"))
	}
	if !(o.TenantFraction > 0 && o.TenantFraction <= 1) {
		errs = append(errs, fmt.Errorf("--max-requests-inflight-tenant-fraction must be in (0,1], got %v", o.TenantFraction))
	}
	return errs
}

// Limits returns the budgets the options describe.
func (o *Options) Limits() Limits {
	return NewLimits(o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight, o.TenantFraction)
}
