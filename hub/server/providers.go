package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/home"
	"github.com/wharfhub/wharf/hub/plugins"
	"github.com/wharfhub/wharf/hub/proxy"
	"github.com/wharfhub/wharf/hub/workspaces"
	"github.com/wharfhub/wharf/sdk"
)

// providerTargets adapts the plugin host to the proxies: a provider the
// host does not know is unknown (404); one it knows but is not running has
// no transport (503).
func providerTargets(h *plugins.Host) proxy.Providers {
	return proxy.ProvidersFunc(func(name string) (proxy.Target, bool) {
		st, ok := h.Status(name)
		if !ok {
			return proxy.Target{}, false
		}
		t := proxy.Target{}
		if st.Descriptor != nil {
			t.PublicPaths = st.Descriptor.PublicPaths
		}
		if rt, ok := h.Transport(name); ok {
			t.Transport = rt
		} else {
			t.RetryAfter = retryAfter(st, time.Now())
		}
		return t, true
	})
}

// retryAfter is how long a caller of a provider that is not running should
// wait: until the supervisor's next launch while it waits out a restart
// backoff (rounded up to whole seconds, as Retry-After carries them), else
// 0, the proxy's default of a few seconds (a launch is under way, or the
// provider failed for good and only an operator can help).
func retryAfter(st plugins.Status, now time.Time) time.Duration {
	if st.State != plugins.StateRestarting || !st.NextStart.After(now) {
		return 0
	}
	d := st.NextStart.Sub(now)
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}

// workspaceIdentity resolves the active workspace of a backend-proxy
// request and checks the caller may use it: the caller needs the "access"
// verb on "/" in that workspace, which admin, edit, view and
// wharf:workspace-access grant (kcp's workspace-content access check).
type workspaceIdentity struct {
	index *workspaces.Index
	authz authorizer.UnconditionalAuthorizer
	homes home.Homes
}

var _ proxy.IdentityResolver = workspaceIdentity{}

func (w workspaceIdentity) Resolve(ctx context.Context, u user.Info, ws string) (sdk.Identity, error) {
	if id, confined := cluster.ConfinedTo(u); ws == "" && confined && id != "" {
		// A confined identity (a service account, an impersonated user)
		// lives in exactly one workspace: that is its default. It still
		// passes the access check below like any named workspace.
		ws = string(id)
	}
	if ws == "" {
		// No header and no cookie: the caller's home, if they have one.
		if w.homes == nil {
			return sdk.Identity{}, proxy.ErrNoWorkspace
		}
		path, _, err := w.homes.Home(ctx, u)
		if errors.Is(err, home.ErrNoHome) {
			return sdk.Identity{}, proxy.ErrNoWorkspace
		}
		if err != nil {
			return sdk.Identity{}, fmt.Errorf("looking up home workspace: %w", err)
		}
		ws = path
	}
	// Not 404: an unknown workspace must look exactly like a forbidden
	// one, so both refusals name only what the caller sent.
	denied := &proxy.ForbiddenError{User: u.GetName(), Workspace: ws, Reason: WorkspaceDenied}
	info, err := w.index.Resolve(ctx, ws)
	if errors.Is(err, workspaces.ErrNotFound) {
		return sdk.Identity{}, denied
	}
	if err != nil {
		return sdk.Identity{}, err
	}
	d, _, err := w.authz.Authorize(cluster.WithCluster(ctx, info.ID), authorizer.AttributesRecord{User: u, Verb: "access", Path: "/"})
	if err != nil || d != authorizer.DecisionAllow {
		return sdk.Identity{}, denied
	}
	return sdk.Identity{User: u.GetName(), Groups: u.GetGroups(), Tenant: string(info.Path), Cluster: string(info.ID)}, nil
}
