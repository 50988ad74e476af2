package edges

// This file stands in for the egress helper's authz.go and egress.go
// (branch fix-edges-egress) until that branch is merged; it is deleted then.
// It fails closed: every authorization is refused.

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wharfhub/wharf/sdk"
)

type denyAll struct{}

func (denyAll) Authorize(context.Context, *http.Request, string, string, string) error {
	return apierrors.NewForbidden(edgeGR, "", nil)
}

func (denyAll) AuthorizeNonResource(context.Context, *http.Request, string, string, string) error {
	return apierrors.NewForbidden(edgeGR, "", nil)
}

func newHubAuthorizer(sdk.HubConfig) (Authorizer, error) { return denyAll{}, nil }

func (p *Provider) newEgress(sdk.HubConfig) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, r, apierrors.NewServiceUnavailable("edge egress is not built yet"))
	})
}
