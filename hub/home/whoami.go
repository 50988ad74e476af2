package home

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// WhoAmIPath is where WithWhoAmI answers.
const WhoAmIPath = "/api/whoami"

// MaxListed bounds the workspaces a whoami answer lists; Truncated tells
// the caller there are more.
const MaxListed = 200

// WhoAmI is the JSON answer of GET /api/whoami.
type WhoAmI struct {
	User   string              `json:"user"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups"`
	Extra  map[string][]string `json:"extra,omitempty"`
	// Home is the caller's home workspace; absent for callers without one.
	Home *Workspace `json:"home,omitempty"`
	// Workspaces are those the caller may access (verb "access" on "/")
	// through a grant that names it: its user name or one of its own
	// groups (listedAs), sorted by path, at most MaxListed, plus its home.
	// A workspace open to every authenticated user is still usable by its
	// path but not listed (review 5, #11).
	Workspaces []Workspace `json:"workspaces"`
	Truncated  bool        `json:"truncated,omitempty"`
}

// Workspace names a workspace both ways.
type Workspace struct {
	Path    string `json:"path"`
	Cluster string `json:"cluster"`
}

// Lister enumerates the workspaces this replica knows (workspaces.Index).
type Lister interface {
	Known() []workspaces.Info
}

// WithWhoAmI answers GET /api/whoami in front of delegate. It must run
// behind authentication and authorization (any authenticated user may read
// it: it is under /api/, public API information).
func WithWhoAmI(delegate http.Handler, homes Homes, known Lister, authz authorizer.UnconditionalAuthorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != WhoAmIPath {
			delegate.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "only GET is allowed on "+WhoAmIPath)
			return
		}
		u, ok := request.UserFrom(r.Context())
		if !ok || u == nil || u.GetName() == "" {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		out := WhoAmI{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: PublicExtra(u.GetExtra())}
		if out.Groups == nil {
			out.Groups = []string{}
		}
		switch path, id, err := homes.Home(r.Context(), u); {
		case err == nil:
			out.Home = &Workspace{Path: path, Cluster: id}
		case !isNoHome(err):
			klog.FromContext(r.Context()).Error(err, "Looking up home workspace", "user", u.GetName())
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "looking up the home workspace failed")
			return
		}
		out.Workspaces, out.Truncated = accessible(r, u, known, authz)
		if out.Home != nil && !out.Truncated {
			// A home created a moment ago through another replica may not
			// have reached this replica's index yet.
			out.Workspaces = withHome(r, u, out.Workspaces, *out.Home, authz)
		}
		body, err := json.Marshal(out)
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "encoding failed")
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// accessible lists the known workspaces in which u, as listedAs sees it,
// has "access" on "/", the check the backend proxy makes.
func accessible(r *http.Request, u user.Info, known Lister, authz authorizer.UnconditionalAuthorizer) ([]Workspace, bool) {
	out := []Workspace{}
	attrs := authorizer.AttributesRecord{User: listedAs(u), Verb: "access", Path: "/"}
	for _, info := range known.Known() {
		if r.Context().Err() != nil {
			break
		}
		if d, _, _ := authz.Authorize(cluster.WithCluster(r.Context(), info.ID), attrs); d != authorizer.DecisionAllow {
			continue
		}
		if len(out) == MaxListed {
			return out, true
		}
		out = append(out, Workspace{Path: string(info.Path), Cluster: string(info.ID)})
	}
	return out, false
}

// everyoneGroups are held by every caller of a kind. A grant to one of them
// names nobody: anyone may bind them in a workspace she creates, as many
// times as her quota allows, so listing what they reach would put every
// other tenant's junk into each caller's list, and past MaxListed push
// the caller's own workspaces out of it (review 5, #11). kcp shows a
// workspace tree the same way: what a user is given, not every workspace
// some stranger opened to all.
var everyoneGroups = sets.New(user.AllAuthenticated, user.AllUnauthenticated, serviceaccount.AllServiceAccountsGroup)

// listedAs is u without everyoneGroups, for deciding what whoami lists.
// A confined identity (a service account, an impersonation) may use one
// workspace at most, so nobody can crowd its list: it is left whole.
func listedAs(u user.Info) user.Info {
	if _, confined := cluster.ConfinedTo(u); confined {
		return u
	}
	groups := make([]string, 0, len(u.GetGroups()))
	for _, g := range u.GetGroups() {
		if !everyoneGroups.Has(g) {
			groups = append(groups, g)
		}
	}
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: groups, Extra: u.GetExtra()}
}

// withHome adds home to list, in path order, unless it is there already
// or u may not access it.
func withHome(r *http.Request, u user.Info, list []Workspace, home Workspace, authz authorizer.UnconditionalAuthorizer) []Workspace {
	i := sort.Search(len(list), func(i int) bool { return list[i].Path >= home.Path })
	if i < len(list) && list[i].Path == home.Path {
		return list
	}
	attrs := authorizer.AttributesRecord{User: u, Verb: "access", Path: "/"}
	if d, _, _ := authz.Authorize(cluster.WithCluster(r.Context(), cluster.ID(home.Cluster)), attrs); d != authorizer.DecisionAllow {
		return list
	}
	return slices.Insert(list, i, home)
}

// secretWords mark extra keys that may carry credentials; they are never
// echoed back, whatever the authenticator that set them meant.
var secretWords = []string{"token", "secret", "password", "session", "refresh", "cookie"}

// PublicExtra returns the user's extra attributes without any whose key
// suggests a credential.
func PublicExtra(extra map[string][]string) map[string][]string {
	if len(extra) == 0 {
		return nil
	}
	out := make(map[string][]string, len(extra))
next:
	for k, v := range extra {
		lk := strings.ToLower(k)
		for _, s := range secretWords {
			if strings.Contains(lk, s) {
				continue next
			}
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

func isNoHome(err error) bool { return err != nil && errors.Is(err, ErrNoHome) }

// writeStatus answers with a Kubernetes Status object.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
