package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// seen is what the provider backend received, echoed back as JSON.
type seen struct {
	Path    string
	RawPath string
	Header  http.Header
}

// echo answers with the request it received, so tests assert on exactly
// what crossed the socket.
func echo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(seen{Path: r.URL.Path, RawPath: r.URL.RawPath, Header: r.Header})
}

// startSocket serves h on a real unix socket and returns the pooled
// transport the plugin host would use. The directory is a short one under
// os.TempDir rather than t.TempDir(): test names make the latter exceed
// the 108-byte limit on socket paths.
func startSocket(t *testing.T, h http.Handler) (http.RoundTripper, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "wproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tr := plugin.NewSocketTransport(sock)
	t.Cleanup(tr.CloseIdleConnections)
	return tr, sock
}

// Test users keyed by their exact Authorization header value.
var users = map[string]user.Info{
	"Bearer alice-token":   &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}},
	"Bearer  odd.token==":  &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}},
	"Bearer nohome-token":  &user.DefaultInfo{Name: "nohome"},
	"Bearer comma-token":   &user.DefaultInfo{Name: "carol", Groups: []string{"a,system:masters"}},
	"Bearer failing-token": &user.DefaultInfo{Name: "dave"},
}

// fakeAuthn stands in for the upstream authentication filter, including
// its deletion of Authorization on success.
func fakeAuthn(delegate http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := users[r.Header.Get("Authorization")]; ok {
			r = r.WithContext(request.WithUser(r.Context(), u))
			r.Header.Del("Authorization")
		}
		delegate.ServeHTTP(w, r)
	})
}

// resolver grants alice root:acme (home) and root:acme:team, bob root:bob.
type resolver struct{ requested chan string }

var workspaces = map[string]map[string]string{ // user -> path -> cluster
	"alice": {"root:acme": "c0acme", "root:acme:team": "c1team"},
	"bob":   {"root:bob": "c2bob"},
	"carol": {"root:carol": "c3carol"},
}

var homes = map[string]string{"alice": "root:acme", "bob": "root:bob", "carol": "root:carol"}

func (res resolver) Resolve(_ context.Context, u user.Info, ws string) (sdk.Identity, error) {
	if res.requested != nil {
		res.requested <- ws
	}
	if u.GetName() == "dave" {
		return sdk.Identity{}, io.ErrUnexpectedEOF
	}
	if ws == "" {
		if ws = homes[u.GetName()]; ws == "" {
			return sdk.Identity{}, ErrNoWorkspace
		}
	}
	id, ok := workspaces[u.GetName()][ws]
	if !ok {
		return sdk.Identity{}, &ForbiddenError{User: u.GetName(), Workspace: ws}
	}
	return sdk.Identity{User: u.GetName(), Groups: u.GetGroups(), Tenant: ws, Cluster: id}, nil
}

// kedgeHeaders returns every X-Kedge-* header the backend received.
func kedgeHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if len(k) >= len(sdk.IdentityHeaderPrefix) && http.CanonicalHeaderKey(k[:len(sdk.IdentityHeaderPrefix)]) == sdk.IdentityHeaderPrefix {
			out[k] = v
		}
	}
	return out
}
