package standalone

import (
	"context"
	"errors"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// defaultFilter and runStatusController bind the parts other packages
// provide (core.New, the status controller).
func defaultFilter(ctx context.Context, cfg *rest.Config, opts core.Options) (Filter, error) {
	return nil, errors.New("core.New not merged yet")
}

func runStatusController(ctx context.Context, cfg *rest.Config) error {
	<-ctx.Done()
	return nil
}
