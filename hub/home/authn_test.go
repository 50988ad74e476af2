package home

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

type ensurerFunc func(ctx context.Context, u user.Info) (string, string, error)

func (f ensurerFunc) Ensure(ctx context.Context, u user.Info) (string, string, error) {
	return f(ctx, u)
}

// TestWithHomeWorkspace: persons trigger Ensure, nobody else does, and
// neither a failing nor a slow Ensure changes the authentication result.
func TestWithHomeWorkspace(t *testing.T) {
	authErr := errors.New("bad token")
	tests := []struct {
		name       string
		user       user.Info
		ok         bool
		err        error
		ensureErr  error
		slow       bool
		wantEnsure bool
	}{
		{name: "person", user: &user.DefaultInfo{Name: "alice"}, ok: true, wantEnsure: true},
		{name: "person, creation fails", user: &user.DefaultInfo{Name: "alice"}, ok: true, ensureErr: errors.New("etcd down"), wantEnsure: true},
		{name: "person, creation slow", user: &user.DefaultInfo{Name: "alice"}, ok: true, slow: true, wantEnsure: true},
		{name: "service account", user: &user.DefaultInfo{Name: "system:serviceaccount:ns:bot"}, ok: true},
		{name: "admin", user: &user.DefaultInfo{Name: "wharf-admin", Groups: []string{user.SystemPrivilegedGroup}}, ok: true},
		{name: "unauthenticated", ok: false},
		{name: "rejected", ok: false, err: authErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var called atomic.Bool
			delegate := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
				if !tt.ok {
					return nil, false, tt.err
				}
				return &authenticator.Response{User: tt.user}, true, nil
			})
			ensure := ensurerFunc(func(ctx context.Context, u user.Info) (string, string, error) {
				called.Store(true)
				if tt.slow {
					<-ctx.Done()
					return "", "", ctx.Err()
				}
				return "root:users:x", "id", tt.ensureErr
			})
			req, _ := http.NewRequest(http.MethodGet, "https://hub/api", nil)
			resp, ok, err := WithHomeWorkspace(delegate, ensure, 50*time.Millisecond).AuthenticateRequest(req)
			if ok != tt.ok || !errors.Is(err, tt.err) || (ok && resp.User != tt.user) {
				t.Errorf("AuthenticateRequest = %v, %v, %v", resp, ok, err)
			}
			if called.Load() != tt.wantEnsure {
				t.Errorf("Ensure called = %v, want %v", called.Load(), tt.wantEnsure)
			}
		})
	}
}
