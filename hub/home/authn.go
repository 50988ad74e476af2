package home

import (
	"context"
	"errors"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/klog/v2"
)

// WithHomeWorkspace wraps the hub's request authenticator: after delegate
// authenticates a person, it makes sure their home workspace exists,
// waiting at most wait for a creation in progress. Authentication never
// fails because of the home; a request that outlasts wait (or whose
// creation failed) proceeds without it and a later one completes it. See
// the package doc for why this is an authenticator and not a filter.
func WithHomeWorkspace(delegate authenticator.Request, homes Ensurer, wait time.Duration) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := delegate.AuthenticateRequest(req)
		if err != nil || !ok || resp == nil || !IsPerson(resp.User) {
			return resp, ok, err
		}
		ctx, cancel := context.WithTimeout(req.Context(), wait)
		defer cancel()
		if _, _, herr := homes.Ensure(ctx, resp.User); herr != nil && !errors.Is(herr, ErrNoHome) {
			klog.FromContext(ctx).Error(herr, "Home workspace not ready; serving the request without it", "user", resp.User.GetName())
		}
		return resp, ok, err
	})
}
