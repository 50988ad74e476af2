package login

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"k8s.io/klog/v2"
)

// identify verifies the ID token in tok (signature, issuer, audience,
// expiry; the nonce when given) and maps it to the hub identity with the
// bearer OIDC authenticator. Revalidate is the ID token's expiry.
func (l *Login) identify(ctx context.Context, d Deps, prov *oidc.Provider, tok *oauth2.Token, nonce string) (Session, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Session{}, errors.New("token response has no ID token")
	}
	idt, err := l.idp.verify(ctx, prov, raw, nonce)
	if err != nil {
		return Session{}, fmt.Errorf("verifying ID token: %w", err)
	}
	resp, ok, err := d.IDTokens.AuthenticateToken(ctx, raw)
	if err != nil || !ok {
		return Session{}, fmt.Errorf("ID token not accepted by the hub: %w", err)
	}
	u := resp.User
	return Session{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Revalidate: idt.Expiry.Unix()}, nil
}

// withRefresh renews a session cookie that is due for revalidation (its
// ID token expired) before the request is authenticated: with the refresh
// token kept in etcd it asks the IdP for new tokens, maps the new ID token
// again (group changes at the IdP take effect), stores the rotated refresh
// token and sets the new cookie on both the response and the request.
// Without a refresh token, or if the IdP refuses, nothing changes and the
// stale cookie authenticates nothing: the user logs in again.
//
// Replicas may race to refresh one session. The record is updated with a
// compare-and-swap on its revision; the loser (whose refresh token may be
// spent by then) adopts the winner's cookie, which the record carries.
func (l *Login) withRefresh(delegate http.Handler, d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := l.cfg.Clock.Now()
		s, ok, err := l.sessions.fromRequest(r, now)
		if ok && err == nil && now.Unix() >= s.Revalidate && l.idp != nil && d.IDTokens != nil {
			res, err, _ := l.refreshes.Do(s.ID, func() (any, error) {
				// Not the request's context: a client leaving mid-refresh
				// must not lose the rotated refresh token between the IdP
				// and etcd.
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), refreshTimeout)
				defer cancel()
				value, exp, err := l.refresh(ctx, d, s, now)
				return refreshed{value: value, expiry: exp}, err
			})
			if err != nil {
				klog.FromContext(r.Context()).V(2).Info("Session not refreshed", "session", shortID(s.ID), "err", err)
			} else {
				got := res.(refreshed)
				http.SetCookie(w, sessionCookie(got.value, got.expiry, now))
				r = withSessionCookie(r, got.value)
			}
		}
		delegate.ServeHTTP(w, r)
	})
}

// refreshTimeout bounds one refresh: IdP call plus etcd update.
const refreshTimeout = 30 * time.Second

// refreshed is a renewed session cookie value and its expiry.
type refreshed struct {
	value  string
	expiry time.Time
}

// refresh returns the renewed session cookie value and its expiry.
func (l *Login) refresh(ctx context.Context, d Deps, old Session, now time.Time) (string, time.Time, error) {
	rec, rev, err := l.store.getSession(ctx, old.ID)
	if err != nil {
		return "", time.Time{}, err
	}
	if v, exp, ok := l.adopt(rec, old.ID, now); ok {
		return v, exp, nil
	}
	rt, err := l.store.openToken(old.ID, rec.RefreshToken)
	if err != nil || rt == "" {
		return "", time.Time{}, errors.New("no refresh token for this session")
	}
	prov, err := l.idp.discover(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	tok, err := l.idp.oauth2(prov).TokenSource(l.idp.ctx(ctx), &oauth2.Token{RefreshToken: rt, Expiry: now.Add(-time.Minute)}).Token()
	if err != nil {
		// Perhaps another replica spent the refresh token first.
		if rec, _, gerr := l.store.getSession(ctx, old.ID); gerr == nil {
			if v, exp, ok := l.adopt(rec, old.ID, now); ok {
				return v, exp, nil
			}
		}
		return "", time.Time{}, fmt.Errorf("refreshing at the IdP: %w", redactOAuth(err))
	}
	s, err := l.identify(ctx, d, prov, tok, "")
	if err != nil {
		return "", time.Time{}, err
	}
	s.ID, s.CSRF, s.Expiry = old.ID, old.CSRF, old.Expiry
	s.Revalidate = min(s.Revalidate, s.Expiry)
	if s.Revalidate <= now.Unix() {
		return "", time.Time{}, errors.New("IdP issued an ID token that is already expired")
	}
	value, err := l.sessions.seal(s)
	if err != nil {
		return "", time.Time{}, err
	}
	next := tok.RefreshToken
	if next == "" {
		next = rt // the IdP does not rotate refresh tokens
	}
	if rec.RefreshToken, err = l.store.sealToken(old.ID, next); err != nil {
		return "", time.Time{}, err
	}
	rec.Current = value
	won, err := l.store.updateSession(ctx, old.ID, rev, rec)
	if err != nil {
		return "", time.Time{}, err
	}
	if !won {
		rec, _, err := l.store.getSession(ctx, old.ID)
		if err != nil {
			return "", time.Time{}, err
		}
		if v, exp, ok := l.adopt(rec, old.ID, now); ok {
			return v, exp, nil
		}
		return "", time.Time{}, errors.New("lost a refresh race and the winner's session is unusable")
	}
	return value, time.Unix(s.Expiry, 0), nil
}

// adopt returns the record's current cookie if it is a fresh version of
// session id (someone else refreshed it already).
func (l *Login) adopt(rec record, id string, now time.Time) (string, time.Time, bool) {
	if rec.Current == "" {
		return "", time.Time{}, false
	}
	s, err := l.sessions.open(rec.Current, now)
	if err != nil || s.ID != id || now.Unix() >= s.Revalidate {
		return "", time.Time{}, false
	}
	return rec.Current, time.Unix(s.Expiry, 0), true
}

// withSessionCookie returns r with its session cookie replaced by value,
// other cookies kept in order.
func withSessionCookie(r *http.Request, value string) *http.Request {
	var parts []string
	for _, c := range r.Cookies() {
		if c.Name == SessionCookie {
			continue
		}
		parts = append(parts, c.Name+"="+c.Value)
	}
	parts = append(parts, SessionCookie+"="+value)
	r = r.Clone(r.Context())
	r.Header.Set("Cookie", strings.Join(parts, "; "))
	return r
}
