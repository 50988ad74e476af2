package cli

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// rootWorkspace is the path of the workspace every other one descends from.
const rootWorkspace = "root"

// errNoWorkspace is the one refusal for a workspace that does not exist and
// for one the caller may not access: the hub answers both alike (403 with
// "workspace access not permitted", or 404 to an administrator), and the
// CLI must not tell them apart either, or it would be an existence oracle.
type errNoWorkspace struct{ name string }

func (e *errNoWorkspace) Error() string {
	return fmt.Sprintf("workspace %q not found, or you may not access it", e.name)
}

// workspaceOf is the /clusters/<path-or-id> segment of a context's server;
// a server without /clusters/ addresses root, as the hub does.
func workspaceOf(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("kubeconfig server %q is not a URL", server)
	}
	_, rest, ok := strings.Cut(u.Path, "/clusters/")
	if !ok {
		return rootWorkspace, nil
	}
	ws, _, _ := strings.Cut(rest, "/")
	if ws == "" {
		return rootWorkspace, nil
	}
	return ws, nil
}

// isPath tells a workspace path (root, root:a:b) from a logical cluster id:
// paths start at root, ids never contain ':'.
func isPath(ws string) bool {
	return ws == rootWorkspace || strings.HasPrefix(ws, rootWorkspace+":")
}

// looksLikeID is the shape of a logical cluster id: 16 lowercase base36
// characters. A child workspace may have such a name too, so this only
// says the argument may be an id.
func looksLikeID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// parentOf is the parent path of p; root has none.
func parentOf(p string) (string, error) {
	if !isPath(p) {
		return "", fmt.Errorf("cannot tell the parent of %q: it is not a workspace path", p)
	}
	i := strings.LastIndex(p, ":")
	if i < 0 {
		return "", errors.New("the root workspace has no parent")
	}
	return p[:i], nil
}

// validPath checks every segment after root is a DNS label, so that a
// typo fails here instead of as a confusing URL error, and no argument can
// smuggle '/', '?' or '%' into the server URL.
func validPath(p string) error {
	segs := strings.Split(p, ":")
	if segs[0] != rootWorkspace {
		return fmt.Errorf("invalid workspace path %q: it must start with root", p)
	}
	for _, s := range segs[1:] {
		if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
			return fmt.Errorf("invalid workspace path %q: %q %s", p, s, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// wsTarget is what `wharf ws use <arg>` asked for, before the hub is asked.
type wsTarget struct {
	// path is the absolute path asked for, or "" when arg may only be an id.
	path string
	// id is arg when it may be a logical cluster id.
	id string
	// previous and home ask for the kubeconfig's previous workspace and the
	// caller's home.
	previous, home bool
}

// parseTarget reads arg relative to the current workspace path cur:
// "-" (previous), "~" (home), ".." (parent), an absolute path, a relative
// path (child or child:grandchild), or a logical cluster id.
func parseTarget(cur, arg string) (wsTarget, error) {
	switch {
	case arg == "-":
		return wsTarget{previous: true}, nil
	case arg == "~":
		return wsTarget{home: true}, nil
	case arg == "." || arg == "":
		return wsTarget{path: cur}, validPathOrID(cur)
	case arg == "..":
		p, err := parentOf(cur)
		return wsTarget{path: p}, err
	case isPath(arg):
		return wsTarget{path: arg}, validPath(arg)
	}
	t := wsTarget{}
	if looksLikeID(arg) {
		t.id = arg
	}
	if isPath(cur) {
		p := cur + ":" + arg
		if err := validPath(p); err != nil {
			if t.id != "" {
				return t, nil
			}
			return t, err
		}
		t.path = p
	} else if t.id == "" {
		return t, fmt.Errorf("the current workspace %q is a cluster id, so %q cannot be resolved relative to it; use an absolute path", cur, arg)
	}
	return t, nil
}

func validPathOrID(ws string) error {
	if looksLikeID(ws) {
		return nil
	}
	return validPath(ws)
}
