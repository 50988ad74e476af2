package resourceproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A ResourceProxy can name any workspace of the hub as its target. The
// provider reaches it as wharf:workspace:<client path>, so a workspace
// that exists but did not enable the provider, or granted that identity
// nothing, answers 403 (the impersonation or the request is not
// authorized), and one that does not exist answers 404. Passed through,
// the difference told a tenant which workspaces exist that she may not see
// (issue 24, B8). Every answer of a workspace target that says the client
// cannot reach that workspace is therefore replaced by one answer, the
// hub's own for a missing workspace (hiddenAnswer), wherever the
// target's answer would reach the client: requests, the ownership check
// before a mutation, and discovery (which falls back, as for a missing
// target). A 403 of the target's RBAC for one kind in a workspace that
// does grant the client something looks the same: telling the two apart
// would take an access review per request, and the target's admin can
// grant the kind to get it served.
//
// Answers of external targets pass through: their existence is the
// client's own Secret's business.

// workspacesResource is what the hub names in its 404 for a workspace
// that does not exist (hub/filters).
var workspacesResource = schema.GroupResource{Group: "tenancy.wharf.dev", Resource: "workspaces"}

// authzDenied matches the message of an authorization (or impersonation)
// denial, as the apiserver's filters word it ("<what> is forbidden: User
// \"<name>\" cannot <verb> ..."); admission and quota refusals, which
// only a caller who can reach the workspace gets, do not match.
var authzDenied = regexp.MustCompile(`is forbidden: User ".*" cannot `)

// maxHiddenBody bounds what is read of a 403 or 404 to classify it.
const maxHiddenBody = 64 << 10

// hiddenAnswer reads a workspace target's 403 or 404 and reports whether
// it says the workspace cannot be reached; then resp's body is consumed.
// Otherwise the body is restored so that it can be passed on.
func hiddenAnswer(route *Route, resp *http.Response) bool {
	if route.Target.External != nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound) {
		return false
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxHiddenBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return hiddenStatus(resp.StatusCode, b)
}

// hiddenStatus classifies a workspace target's answer (see hiddenAnswer).
func hiddenStatus(code int, body []byte) bool {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return false
	}
	switch code {
	case http.StatusNotFound:
		return st.Details != nil && st.Details.Group == workspacesResource.Group && st.Details.Kind == workspacesResource.Resource
	case http.StatusForbidden:
		return st.Reason == metav1.StatusReasonForbidden && authzDenied.MatchString(st.Message)
	}
	return false
}

// writeHidden answers as the hub does for a workspace target that does not
// exist, whether or not it does.
func writeHidden(w http.ResponseWriter, route *Route) {
	writeErr(w, apierrors.NewNotFound(workspacesResource, route.Target.Workspace))
}
