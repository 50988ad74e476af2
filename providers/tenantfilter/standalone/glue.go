package standalone

import (
	"context"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// defaultFilter is core.New.
func defaultFilter(ctx context.Context, cfg *rest.Config, opts core.Options) (Filter, error) {
	return core.New(ctx, cfg, opts)
}

// runStatusController runs the status controller until ctx ends.
func runStatusController(ctx context.Context, cfg *rest.Config) error {
	klog.FromContext(ctx).Info("status controller: not part of this build yet")
	<-ctx.Done()
	return nil
}
