package idp

import (
	"context"
	"fmt"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// accessToken is what an opaque access token's id refers to.
type accessToken struct {
	subject string
	expires time.Time
}

// refreshToken is an opaque, single-use refresh token: each use rotates it.
type refreshToken struct {
	token    string
	clientID string
	subject  string
	scopes   []string
	amr      []string
	authTime time.Time
}

var _ op.RefreshTokenRequest = (*refreshToken)(nil)

func (r *refreshToken) GetAMR() []string            { return r.amr }
func (r *refreshToken) GetAudience() []string       { return []string{r.clientID} }
func (r *refreshToken) GetAuthTime() time.Time      { return r.authTime }
func (r *refreshToken) GetClientID() string         { return r.clientID }
func (r *refreshToken) GetScopes() []string         { return r.scopes }
func (r *refreshToken) GetSubject() string          { return r.subject }
func (r *refreshToken) SetCurrentScopes(s []string) { r.scopes = s }

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	id := randomID()
	exp := time.Now().Add(s.idTokenLife)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessTokens[id] = accessToken{subject: req.GetSubject(), expires: exp}
	return id, exp, nil
}

// CreateAccessAndRefreshTokens issues a new refresh token. When current is
// set (the refresh_token grant), current is consumed: presenting it again
// fails.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	rt := &refreshToken{token: randomID(), subject: req.GetSubject(), scopes: slices.Clone(req.GetScopes()), amr: []string{"pwd"}, authTime: time.Now()}
	switch r := req.(type) {
	case op.AuthRequest:
		rt.clientID, rt.amr, rt.authTime = r.GetClientID(), r.GetAMR(), r.GetAuthTime()
	case op.RefreshTokenRequest:
		rt.clientID, rt.amr, rt.authTime = r.GetClientID(), r.GetAMR(), r.GetAuthTime()
	case *op.DeviceAuthorizationState:
		rt.clientID, rt.amr, rt.authTime = r.GetClientID(), r.GetAMR(), r.GetAuthTime()
	default:
		return "", "", time.Time{}, fmt.Errorf("refresh token for %T not supported", req)
	}
	s.mu.Lock()
	if current != "" {
		if _, ok := s.refreshTokens[current]; !ok {
			s.mu.Unlock()
			return "", "", time.Time{}, op.ErrInvalidRefreshToken
		}
		delete(s.refreshTokens, current)
	}
	s.refreshTokens[rt.token] = rt
	s.mu.Unlock()
	id, exp, err := s.CreateAccessToken(ctx, req)
	return id, rt.token, exp, err
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshTokens[token]
	if !ok {
		return nil, op.ErrInvalidRefreshToken
	}
	c := *rt
	return &c, nil
}

func (s *storage) TerminateSession(_ context.Context, subject, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, rt := range s.refreshTokens {
		if rt.subject == subject && rt.clientID == clientID {
			delete(s.refreshTokens, tok)
		}
	}
	return nil
}

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rt, ok := s.refreshTokens[tokenOrID]; ok {
		if rt.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
		}
		delete(s.refreshTokens, tokenOrID)
		return nil
	}
	delete(s.accessTokens, tokenOrID)
	return nil
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, clientID, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshTokens[token]
	if !ok || rt.clientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return rt.subject, rt.token, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, fmt.Errorf("JWT profile keys %w", errNotFound)
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, fmt.Errorf("JWT profile grant not supported")
}
