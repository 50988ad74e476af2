package home

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/workspaces"
)

type listerFunc func() []workspaces.Info

func (f listerFunc) Known() []workspaces.Info { return f() }

type homesFunc func(ctx context.Context, u user.Info) (string, string, error)

func (f homesFunc) Home(ctx context.Context, u user.Info) (string, string, error) { return f(ctx, u) }

// known returns n workspaces root:w000 ... in path order, with ids id000 ...
func known(n int) listerFunc {
	return func() []workspaces.Info {
		out := make([]workspaces.Info, n)
		for i := range out {
			out[i] = workspaces.Info{ID: cluster.ID(fmt.Sprintf("id%03d", i)), Path: cluster.Path(fmt.Sprintf("root:w%03d", i))}
		}
		return out
	}
}

// allowIDs grants access to the listed logical clusters only.
func allowIDs(ids ...string) authorizer.AuthorizerFunc {
	return func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		id, _ := cluster.From(ctx)
		if a.GetVerb() != "access" || a.GetPath() != "/" {
			return authorizer.DecisionDeny, "", nil
		}
		for _, x := range ids {
			if string(id) == x {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
}

func TestWhoAmI(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", UID: "u1", Groups: []string{"devs"},
		Extra: map[string][]string{"wharf.dev/idp": {"z"}, "wharf.dev/refresh-token": {"secret"}}}
	aliceHome := homesFunc(func(context.Context, user.Info) (string, string, error) { return "root:users:alice-x", "idhome", nil })
	noHome := homesFunc(func(context.Context, user.Info) (string, string, error) { return "", "", ErrNoHome })
	broken := homesFunc(func(context.Context, user.Info) (string, string, error) { return "", "", fmt.Errorf("etcd down") })
	all := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	tests := []struct {
		name       string
		method     string
		user       user.Info
		homes      Homes
		known      listerFunc
		authz      authorizer.Authorizer
		code       int
		home       string
		paths      []string
		truncated  bool
		listLength int
	}{
		{name: "home and granted workspaces", user: alice, homes: aliceHome, known: known(5), authz: allowIDs("id001", "id003", "idhome"),
			code: 200, home: "root:users:alice-x", paths: []string{"root:users:alice-x", "root:w001", "root:w003"}},
		{name: "no home", user: alice, homes: noHome, known: known(3), authz: allowIDs("id002"), code: 200, paths: []string{"root:w002"}},
		{name: "bounded", user: alice, homes: noHome, known: known(MaxListed + 5), authz: all, code: 200, truncated: true, listLength: MaxListed},
		{name: "lookup fails", user: alice, homes: broken, known: known(1), authz: all, code: 500},
		{name: "unauthenticated", homes: noHome, known: known(1), authz: all, code: 401},
		{name: "POST", method: http.MethodPost, user: alice, homes: noHome, known: known(1), authz: all, code: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
			h := WithWhoAmI(next, tt.homes, tt.known, tt.authz)
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, WhoAmIPath, nil)
			if tt.user != nil {
				req = req.WithContext(request.WithUser(req.Context(), tt.user))
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("code = %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if tt.code != 200 {
				var st metav1.Status
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || int(st.Code) != tt.code {
					t.Errorf("error body is no Status: %s", rec.Body)
				}
				return
			}
			var got WhoAmI
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.User != "alice" || got.UID != "u1" || len(got.Groups) != 1 || len(got.Extra) != 1 || got.Extra["wharf.dev/idp"][0] != "z" {
				t.Errorf("identity = %+v", got)
			}
			if (got.Home == nil && tt.home != "") || (got.Home != nil && got.Home.Path != tt.home) {
				t.Errorf("home = %+v, want %q", got.Home, tt.home)
			}
			if got.Truncated != tt.truncated {
				t.Errorf("truncated = %v", got.Truncated)
			}
			if tt.listLength > 0 {
				if len(got.Workspaces) != tt.listLength {
					t.Errorf("listed %d, want %d", len(got.Workspaces), tt.listLength)
				}
				return
			}
			if fmt.Sprint(paths(got.Workspaces)) != fmt.Sprint(tt.paths) {
				t.Errorf("workspaces = %v, want %v", paths(got.Workspaces), tt.paths)
			}
		})
	}
	// Other paths pass through.
	rec := httptest.NewRecorder()
	WithWhoAmI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }), noHome, known(0), all).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("/api/v1 = %d", rec.Code)
	}
}

func paths(ws []Workspace) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Path)
	}
	return out
}

// TestWhoAmIListsWhatNamesTheCaller: a workspace reached only through a
// group every caller holds (a stranger's binding of system:authenticated)
// is not listed; one reached by the caller's name or own group is, and so
// is the home, however it is reached; a confined identity's workspace is
// listed as it is reached (review 5, #11).
func TestWhoAmIListsWhatNamesTheCaller(t *testing.T) {
	// id000: system:authenticated; id001: user alice; id002: group devs;
	// id003: system:serviceaccounts; idhome: system:authenticated only.
	grants := map[string]func(user.Info) bool{
		"id000":  func(u user.Info) bool { return slices.Contains(u.GetGroups(), user.AllAuthenticated) },
		"id001":  func(u user.Info) bool { return u.GetName() == "alice" },
		"id002":  func(u user.Info) bool { return slices.Contains(u.GetGroups(), "devs") },
		"id003":  func(u user.Info) bool { return slices.Contains(u.GetGroups(), "system:serviceaccounts") },
		"idhome": func(u user.Info) bool { return slices.Contains(u.GetGroups(), user.AllAuthenticated) },
	}
	authz := authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		id, _ := cluster.From(ctx)
		if g, ok := grants[string(id)]; ok && a.GetVerb() == "access" && g(a.GetUser()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	aliceHome := homesFunc(func(context.Context, user.Info) (string, string, error) { return "root:users:alice-x", "idhome", nil })
	noHome := homesFunc(func(context.Context, user.Info) (string, string, error) { return "", "", ErrNoHome })
	for _, tc := range []struct {
		name  string
		u     user.Info
		homes Homes
		want  []string
	}{
		{"person", &user.DefaultInfo{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}, aliceHome,
			[]string{"root:users:alice-x", "root:w001", "root:w002"}},
		{"stranger", &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated, "system:serviceaccounts"}}, noHome, []string{}},
		{"confined", &user.DefaultInfo{Name: "carol", Groups: []string{user.AllAuthenticated},
			Extra: map[string][]string{cluster.ConfinedExtra: {"id000"}}}, noHome, []string{"root:w000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, WhoAmIPath, nil)
			req = req.WithContext(request.WithUser(req.Context(), tc.u))
			rec := httptest.NewRecorder()
			// This fake does not confine: the confined case shows only
			// that such an identity's groups are kept whole.
			WithWhoAmI(http.NotFoundHandler(), tc.homes, known(4), authz).ServeHTTP(rec, req)
			var got WhoAmI
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
			}
			if fmt.Sprint(paths(got.Workspaces)) != fmt.Sprint(tc.want) {
				t.Errorf("workspaces = %v, want %v", paths(got.Workspaces), tc.want)
			}
			if len(got.Groups) != len(tc.u.GetGroups()) {
				t.Errorf("groups = %v: whoami reports the caller's groups whole", got.Groups)
			}
		})
	}
}
