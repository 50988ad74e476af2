package login

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
)

// DefaultScopes are requested when the hub names none: an ID token with
// email, name and groups, and a refresh token.
var DefaultScopes = []string{oidc.ScopeOpenID, "email", "profile", "groups", oidc.ScopeOfflineAccess}

// OIDC is a public client of one IdP.
type OIDC struct {
	Issuer   string
	ClientID string
	Scopes   []string
	// HTTP reaches the IdP; it must trust the IdP's CA.
	HTTP *http.Client
}

// client is the IdP's discovered endpoints and an ID token verifier.
type client struct {
	provider *oidc.Provider
	conf     oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func (o OIDC) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.HTTP)
}

// client discovers the IdP.
func (o OIDC) client(ctx context.Context) (*client, error) {
	if _, err := httpsURL("issuer", o.Issuer); err != nil {
		return nil, err
	}
	p, err := oidc.NewProvider(o.ctx(ctx), o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discovering OIDC issuer: %w", err)
	}
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	return &client{
		provider: p,
		conf:     oauth2.Config{ClientID: o.ClientID, Endpoint: p.Endpoint(), Scopes: scopes},
		verifier: p.Verifier(&oidc.Config{ClientID: o.ClientID}),
	}, nil
}

// entry verifies the ID token in tok and returns what to cache. nonce, if
// set, must match the token's.
func (o OIDC) entry(ctx context.Context, c *client, tok *oauth2.Token, nonce string) (tokencache.Entry, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return tokencache.Entry{}, errors.New("the IdP returned no ID token")
	}
	idt, err := c.verifier.Verify(o.ctx(ctx), raw)
	if err != nil {
		return tokencache.Entry{}, fmt.Errorf("verifying ID token: %w", err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return tokencache.Entry{}, errors.New("ID token nonce does not match the request")
	}
	return tokencache.Entry{IDToken: raw, RefreshToken: tok.RefreshToken, Expiry: idt.Expiry}, nil
}

// Refresh trades e's refresh token for a new ID token (and, with a
// rotating IdP, a new refresh token).
func (o OIDC) Refresh(ctx context.Context, e tokencache.Entry) (tokencache.Entry, error) {
	if e.RefreshToken == "" {
		return e, errors.New("the ID token expired and there is no refresh token; run wharf login again")
	}
	c, err := o.client(ctx)
	if err != nil {
		return e, err
	}
	// An expired token makes the token source refresh at once.
	tok, err := c.conf.TokenSource(o.ctx(ctx), &oauth2.Token{RefreshToken: e.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		return e, fmt.Errorf("refreshing the ID token (run wharf login again if this persists): %w", redact(err))
	}
	n, err := o.entry(ctx, c, tok, "")
	if err != nil {
		return e, err
	}
	if n.RefreshToken == "" {
		n.RefreshToken = e.RefreshToken // the IdP does not rotate
	}
	return n, nil
}

// redact keeps the OAuth error code but drops response bodies, which may
// echo what was sent.
func redact(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("%s: %s", re.Response.Status, re.ErrorCode)
		}
		return errors.New(re.Response.Status)
	}
	return err
}
