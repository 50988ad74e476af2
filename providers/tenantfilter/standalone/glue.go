package standalone

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/tenantfilter/controller"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// defaultFilter is core.New.
func defaultFilter(ctx context.Context, cfg *rest.Config, opts core.Options) (Filter, error) {
	return core.New(ctx, cfg, opts)
}

// runStatusController runs the status controller until ctx ends.
func runStatusController(ctx context.Context, cfg *rest.Config) error {
	return controller.Run(ctx, cfg, controller.Options{})
}
