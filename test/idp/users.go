package idp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a person who can log in at the IdP's login form.
type User struct {
	Username string
	Password string
	Email    string
	Groups   []string
	// Subject is the ID token's sub; empty means "sub-<username>".
	Subject string
}

// defaultUser is whom Mint's tokens describe when the subject is not a
// registered user.
var defaultUser = User{Email: "grace@example.com", Groups: []string{"admins"}}

func (s *storage) checkPassword(username, password string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Username == username && subtle.ConstantTimeCompare([]byte(u.Password), []byte(password)) == 1 {
			return u, true
		}
	}
	return User{}, false
}

func (s *storage) userBySubject(subject string) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Subject == subject {
			return u
		}
	}
	return defaultUser
}

func (s *storage) userByName(username string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Username == username {
			return u, true
		}
	}
	return User{}, false
}

// SetUserinfoFromScopes fills the ID token's claims: email,
// email_verified, name and groups.
func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, subject, _ string, _ []string) error {
	u := s.userBySubject(subject)
	info.Subject = subject
	info.Email = u.Email
	info.EmailVerified = true
	if u.Username != "" {
		info.Name = u.Username
		info.PreferredUsername = u.Username
	}
	info.AppendClaims("groups", u.Groups)
	return nil
}

func (s *storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	at, ok := s.accessTokens[tokenID]
	s.mu.Unlock()
	if !ok || at.subject != subject {
		return fmt.Errorf("access token %w", errNotFound)
	}
	return s.SetUserinfoFromScopes(ctx, info, subject, "", nil)
}

func (s *storage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	info := new(oidc.UserInfo)
	if err := s.SetUserinfoFromToken(ctx, info, tokenID, subject, ""); err != nil {
		return err
	}
	resp.SetUserInfo(info)
	resp.Active = true
	resp.ClientID = clientID
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		if c.ID == id {
			return &opClient{c: c, loginURL: s.loginURL, idTokenLife: s.idTokenLife, deviceFlow: s.deviceFlow}, nil
		}
	}
	return nil, fmt.Errorf("client %q %w", id, errNotFound)
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		if c.ID == id && c.Secret != "" && subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) == 1 {
			return nil
		}
	}
	return fmt.Errorf("client %q: wrong secret", id)
}

// randomID is an unguessable identifier for codes, tokens and requests.
func randomID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}
