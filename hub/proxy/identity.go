package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/sdk"
)

const (
	// WorkspaceHeader selects the active workspace for one request.
	WorkspaceHeader = "X-Wharf-Workspace"
	// WorkspaceCookie is the portal's remembered active workspace. Like
	// every hub cookie it has the __Host- prefix: a sibling subdomain
	// cannot plant a selection (the resolver checks access anyway, but the
	// choice of workspace is the user's alone).
	WorkspaceCookie = "__Host-wharf_workspace"
)

// IdentityResolver turns an authenticated caller into the identity asserted
// to a provider.
type IdentityResolver interface {
	// Resolve verifies that u may access workspace (a path or logical
	// cluster id; "" means u's home workspace) and returns the identity to
	// assert: User, Groups, Tenant (workspace path) and Cluster (logical
	// cluster id). It returns a *ForbiddenError when u may not access the
	// workspace or it does not exist (so existence is not revealed), and
	// ErrNoWorkspace when workspace is "" and u has no home. Any other
	// error refuses the request with 500.
	Resolve(ctx context.Context, u user.Info, workspace string) (sdk.Identity, error)
}

// IdentityResolverFunc adapts a function to IdentityResolver.
type IdentityResolverFunc func(ctx context.Context, u user.Info, workspace string) (sdk.Identity, error)

// Resolve implements IdentityResolver.
func (f IdentityResolverFunc) Resolve(ctx context.Context, u user.Info, workspace string) (sdk.Identity, error) {
	return f(ctx, u, workspace)
}

// ErrNoWorkspace means no workspace was selected and the caller has no home
// workspace; the proxy answers 400.
var ErrNoWorkspace = errors.New("no workspace selected")

// ForbiddenError is the resolver's refusal; the proxy answers 403.
type ForbiddenError struct {
	User      string
	Workspace string
	// Reason is shown to the caller; keep it free of other tenants' data.
	Reason string
}

func (e *ForbiddenError) Error() string {
	msg := fmt.Sprintf("user %q may not access workspace %q", e.User, e.Workspace)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// RequestedWorkspace is the caller's choice of active workspace: the
// X-Wharf-Workspace header, then the __Host-wharf_workspace cookie, else "" (the
// home workspace). It is only a request; the resolver verifies it.
func RequestedWorkspace(r *http.Request) string {
	if v := strings.TrimSpace(r.Header.Get(WorkspaceHeader)); v != "" {
		return v
	}
	if c, err := r.Cookie(WorkspaceCookie); err == nil {
		return strings.TrimSpace(c.Value)
	}
	return ""
}

// validateIdentity refuses anything the X-Kedge-* encoding cannot carry
// faithfully. sdk.IdentityFrom trims values and splits groups on commas, so
// "a,system:masters" would become two groups.
func validateIdentity(id sdk.Identity) error {
	if id.User == "" {
		return errors.New("resolver returned an empty user")
	}
	check := func(what, v string) error {
		if v != strings.TrimSpace(v) || !validHeaderValue(v) {
			return fmt.Errorf("%s %q cannot be sent as a header value", what, v)
		}
		return nil
	}
	if err := check("user", id.User); err != nil {
		return err
	}
	if err := check("tenant", id.Tenant); err != nil {
		return err
	}
	if err := check("cluster", id.Cluster); err != nil {
		return err
	}
	for _, g := range id.Groups {
		if g == "" || strings.Contains(g, ",") {
			return fmt.Errorf("group %q cannot be sent in %s", g, sdk.HeaderGroups)
		}
		if err := check("group", g); err != nil {
			return err
		}
	}
	return nil
}

type authorizationKey struct{}

// WithAuthorizationPreserved remembers the inbound Authorization header
// before the upstream authentication filter deletes it on success, so the
// backend proxy can forward the caller's token byte for byte. Wrap it
// outside (before) the authentication filter.
func WithAuthorizationPreserved(delegate http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Values("Authorization"); len(v) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), authorizationKey{}, append([]string(nil), v...)))
		}
		delegate.ServeHTTP(w, r)
	})
}

// restoreAuthorization puts back the preserved Authorization when
// authentication removed it; a header still present wins.
func restoreAuthorization(ctx context.Context, h http.Header) {
	if len(h.Values("Authorization")) > 0 {
		return
	}
	if v, ok := ctx.Value(authorizationKey{}).([]string); ok {
		h["Authorization"] = append([]string(nil), v...)
	}
}

// validHeaderValue reports whether v has no control characters, which
// net/http would refuse to send (or a peer could misparse).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
