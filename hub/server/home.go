package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/home"
	"github.com/wharfhub/wharf/hub/registry/reviews"
)

// homeWait bounds how long a person's first request waits for their home
// workspace to be created; creation normally takes well under a second.
const homeWait = 20 * time.Second

// homes creates and finds persons' home workspaces.
type homes = home.Manager

// withHomes creates the home-workspace manager and wraps the request
// authenticator so that a person's first authenticated request creates
// their home (see package home for why an authenticator wrapper). Call it
// before the loopback authenticator is added: the loopback client is no
// person anyway, and must not pay for the check.
// The token-login kubeconfig points at the home too.
func withHomes(gc *genericapiserver.RecommendedConfig, extra *ExtraConfig) *home.Manager {
	m := home.NewManager(extra.Index, gc.Authorization.Authorizer)
	gc.Authentication.Authenticator = home.WithHomeWorkspace(gc.Authentication.Authenticator, m, homeWait)
	extra.LoginDeps.Home = m.HomeOrRoot
	return m
}

// withWhoAmI serves GET /api/whoami; wrap it inside the generic chain, so
// behind authentication and authorization.
func withWhoAmI(apiHandler http.Handler, extra *ExtraConfig, authz authorizer.Authorizer) http.Handler {
	return home.WithWhoAmI(apiHandler, extra.Homes, extra.Index, authz)
}

// bindHomes hands the manager the Workspace storage once it exists, makes
// SelfSubjectReview report the caller's home, and creates root:users at
// start, so that it is always the hub's own.
func (h *Hub) bindHomes(ws home.Store, builtin map[schema.GroupVersion]map[string]rest.Storage) error {
	h.Extra.Homes.Bind(ws, h.initializeWorkspace)
	builtin[authenticationv1.SchemeGroupVersion]["selfsubjectreviews"] = reviews.WhoAmIREST{Home: homeOf(h.Extra.Homes)}
	return h.Generic.AddPostStartHook("wharf-users-workspace", func(hc genericapiserver.PostStartHookContext) error {
		err := wait.PollUntilContextTimeout(hc, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := h.Extra.Homes.EnsureUsers(ctx); err != nil {
				klog.V(2).InfoS("Waiting to create the users workspace", "err", err)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("creating %s: %w", home.UsersPath, err)
		}
		return nil
	})
}

// homeOf adapts the manager to SelfSubjectReview.
func homeOf(m *home.Manager) func(ctx context.Context, u user.Info) (string, string, bool) {
	return func(ctx context.Context, u user.Info) (string, string, bool) {
		path, id, err := m.Home(ctx, u)
		if err != nil && !errors.Is(err, home.ErrNoHome) {
			klog.FromContext(ctx).Error(err, "Looking up home workspace", "user", u.GetName())
		}
		return path, id, err == nil
	}
}
