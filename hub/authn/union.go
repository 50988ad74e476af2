package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/klog/v2"
)

// Sources are the token authenticators of the union, in the order they
// are tried. A nil source is skipped.
type Sources struct {
	// Static holds the admin token and the token file (see StaticTokens).
	Static authenticator.Token
	// ServiceAccounts is the slot for hub-issued service-account tokens.
	ServiceAccounts authenticator.Token
	// OIDC verifies ID tokens of the configured issuer.
	OIDC authenticator.Token
	// Session authenticates the browser session cookie (hub/login). It
	// is tried last and only sees requests without Authorization, so a
	// bearer request never falls back to a cookie.
	Session authenticator.Request
	// APIAudiences, when set, make the static and OIDC sources
	// audience-agnostic as upstream: a request whose context names target
	// audiences (a TokenReview's) is accepted by them only if those
	// include one of these, and reports the common ones. Requests without
	// target audiences are unaffected.
	APIAudiences []string
}

// New returns the request authenticator for the hub: a bearer token tried
// against each source in order, then the session cookie. Every identity it returns is also in
// system:authenticated, as upstream. There is no anonymous fallback here:
// a request that no source accepts is unauthenticated and the apiserver
// answers a generic 401. The hub adds anonymous access to the health
// endpoints only, around its whole chain (WithAnonymousHealth); TokenReview
// uses this union alone.
func New(s Sources) authenticator.Request {
	agnostic := func(t authenticator.Token) authenticator.Token {
		if t == nil || len(s.APIAudiences) == 0 {
			return t
		}
		return authenticator.WrapAudienceAgnosticToken(s.APIAudiences, t)
	}
	// Service-account tokens carry audiences of their own and check them
	// against the target audiences themselves.
	var tokens []authenticator.Token
	for _, t := range []authenticator.Token{agnostic(s.Static), s.ServiceAccounts, agnostic(s.OIDC)} {
		if t != nil {
			tokens = append(tokens, t)
		}
	}
	var req authenticator.Request = bearertoken.New(hashedErrors{tokenunion.New(tokens...)})
	if s.Session != nil {
		req = requestunion.New(req, s.Session)
	}
	return group.NewAuthenticatedGroupAdder(req)
}

// TokenHash is how a token may appear in logs and errors: enough to
// correlate, useless as a credential.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:4])
}

// hashedErrors tags rejection errors with the token's hash. The apiserver
// logs authentication errors; the hash lets an operator match a user's
// report to a log line. Upstream errors name the failed check, never the
// token, and they never reach the client (it gets a plain 401).
type hashedErrors struct{ authenticator.Token }

func (h hashedErrors) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	resp, ok, err := h.Token.AuthenticateToken(ctx, token)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("bearer token rejected", "token", TokenHash(token))
		return nil, false, fmt.Errorf("token %s: %w", TokenHash(token), err)
	}
	return resp, ok, nil
}
