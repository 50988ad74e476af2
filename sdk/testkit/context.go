package testkit

import (
	"context"

	"github.com/wharfhub/wharf/sdk"
)

func contextWithIdentity(ctx context.Context, id sdk.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}
