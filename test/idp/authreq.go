package idp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// errNotFound is what lookups of unknown ids, codes and tokens return.
var errNotFound = errors.New("not found")

// authRequest is one pending authorization: created at /authorize,
// completed by the login form, exchanged once through its code.
type authRequest struct {
	id       string
	req      oidc.AuthRequest
	subject  string // set by a successful login
	authTime time.Time
	done     bool
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string              { return []string{a.req.ClientID} }
func (a *authRequest) GetAuthTime() time.Time             { return a.authTime }
func (a *authRequest) GetClientID() string                { return a.req.ClientID }
func (a *authRequest) GetNonce() string                   { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.req.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }

func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	m := a.req.CodeChallengeMethod
	if m == "" {
		m = oidc.CodeChallengeMethodPlain
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: m}
}

// CreateAuthRequest records a validated /authorize request. The user is
// unknown until the login form succeeds.
func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	a := &authRequest{id: randomID(), req: *req}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authRequests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok {
		return nil, fmt.Errorf("auth request %w", errNotFound)
	}
	return a, nil
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[s.codes[code]]
	if !ok {
		return nil, fmt.Errorf("code %w", errNotFound)
	}
	return a, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest runs after a code exchange, which makes every code
// single-use.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// completeLogin marks the auth request as authenticated by username.
func (s *storage) completeLogin(id, username, password string) error {
	u, ok := s.checkPassword(username, password)
	if !ok {
		return errors.New("wrong username or password")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok {
		return fmt.Errorf("auth request %w", errNotFound)
	}
	a.subject, a.authTime, a.done = u.Subject, time.Now(), true
	return nil
}
