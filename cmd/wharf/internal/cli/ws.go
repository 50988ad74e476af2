package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newWSCommand is `wharf ws`, modelled on kcp's `kubectl ws`: it reads and
// rewrites the /clusters/<workspace> path of the current context's server.
func newWSCommand() *cobra.Command {
	f := &hubFlags{}
	cmd := &cobra.Command{
		Use:     "ws",
		Aliases: []string{"workspace"},
		Short:   "Show, switch, list, create and delete workspaces",
		Long: `ws works on the workspace of the current kubeconfig context, the
/clusters/<workspace> part of its server URL, as kcp's "kubectl ws" does.

  wharf ws                      print the current workspace
  wharf ws use root:acme        an absolute path
  wharf ws use team-a           a child (or child:grandchild) of the current one
  wharf ws use 0123456789abcdef a logical cluster id
  wharf ws use ..               the parent
  wharf ws use -                the previous workspace (kept in the
                                "wharf-previous" context)
  wharf ws use ~                your home workspace
  wharf ws tree                 the workspaces you may access
  wharf ws create team-b [--enter]
  wharf ws delete team-b

A workspace that does not exist and one you may not access give the same
error, as the hub answers both alike.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return wsCurrent(cmd.Context(), cmd.OutOrStdout(), *f)
		},
	}
	// --workspace would contradict what these commands do; they take the
	// workspace as an argument instead.
	cmd.PersistentFlags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: kubectl's rules, $KUBECONFIG or ~/.kube/config)")
	cmd.PersistentFlags().StringVar(&f.context, "context", "", "kubeconfig context of the hub (default: the current context)")
	cmd.AddCommand(newWSUseCommand(f), newWSTreeCommand(f), newWSCreateCommand(f), newWSDeleteCommand(f))
	return cmd
}

func newWSUseCommand(f *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "use <path|name|id|..|-|~>",
		Short: "Switch the current context to another workspace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return wsUse(cmd.Context(), cmd.OutOrStdout(), *f, args[0])
		},
	}
}

// wsState is the context the ws commands act on: its kubeconfig, a
// connection in its current workspace, and that workspace's path (or id
// when the hub does not list it).
type wsState struct {
	kc      *wsKubeconfig
	conn    *hubConn
	current string
	who     *whoAmI
}

// loadWS resolves the context and its current workspace. The path is taken
// from the server URL; an id there is resolved to a path through
// /api/whoami so relative arguments and ".." work after "use <id>".
func loadWS(ctx context.Context, f hubFlags) (*wsState, error) {
	kc, err := loadKubeconfig(f)
	if err != nil {
		return nil, err
	}
	conn, err := f.connect()
	if err != nil {
		return nil, err
	}
	cur, err := workspaceOf(conn.rest.Host)
	if err != nil {
		return nil, err
	}
	s := &wsState{kc: kc, conn: conn, current: cur}
	if !isPath(cur) {
		who, err := s.whoami(ctx)
		if err != nil {
			return nil, err
		}
		if p, ok := who.pathOf(cur); ok {
			s.current = p
		}
	}
	return s, nil
}

// whoami is /api/whoami, asked at most once per command.
func (s *wsState) whoami(ctx context.Context) (*whoAmI, error) {
	if s.who != nil {
		return s.who, nil
	}
	w, err := s.conn.whoami(ctx)
	if err != nil {
		return nil, err
	}
	s.who = w
	return w, nil
}

func wsCurrent(ctx context.Context, out io.Writer, f hubFlags) error {
	s, err := loadWS(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Current workspace is %q.\n", s.current)
	return nil
}

// wsUse resolves arg, checks with the hub that the caller may use the
// target, and only then rewrites the kubeconfig: a typo never leaves the
// context pointing at a workspace kubectl cannot reach.
func wsUse(ctx context.Context, out io.Writer, f hubFlags, arg string) error {
	s, err := loadWS(ctx, f)
	if err != nil {
		return err
	}
	target, err := s.resolve(ctx, arg)
	if err != nil {
		return err
	}
	if err := s.conn.checkAccess(ctx, target); err != nil {
		var nw *errNoWorkspace
		if errors.As(err, &nw) && !isPath(arg) && looksLikeID(arg) {
			// Neither a child nor an id: name what the caller typed.
			nw.name = arg
		}
		return err
	}
	server, err := withWorkspace(s.conn.rest.Host, target)
	if err != nil {
		return err
	}
	if err := s.kc.setServer(server); err != nil {
		return err
	}
	fmt.Fprintf(out, "Current workspace is %q.\n", target)
	return nil
}

// resolve turns a `use` argument into the path (or, failing that, the id)
// to put in the server URL.
func (s *wsState) resolve(ctx context.Context, arg string) (string, error) {
	t, err := parseTarget(s.current, arg)
	if err != nil {
		return "", err
	}
	switch {
	case t.previous:
		prev, err := s.kc.previousServer()
		if err != nil {
			return "", err
		}
		ws, err := workspaceOf(prev)
		if err != nil {
			return "", err
		}
		if !isPath(ws) {
			if who, err := s.whoami(ctx); err == nil {
				if p, ok := who.pathOf(ws); ok {
					ws = p
				}
			}
		}
		return ws, nil
	case t.home:
		who, err := s.whoami(ctx)
		if err != nil {
			return "", err
		}
		if who.Home == nil {
			return "", fmt.Errorf("user %q has no home workspace", who.User)
		}
		return who.Home.Path, nil
	case t.id == "":
		return t.path, nil
	}
	// arg may be a child's name or a cluster id. A child the caller may
	// access wins (it is what a relative name means); else an id the hub
	// lists; else the child, which the access check then refuses exactly
	// as it would a missing id.
	who, err := s.whoami(ctx)
	if err != nil {
		return "", err
	}
	if t.path != "" && who.has(t.path) {
		return t.path, nil
	}
	if p, ok := who.pathOf(t.id); ok {
		return p, nil
	}
	switch {
	case t.path == "":
		return t.id, nil
	case who.Truncated:
		// The list is cut short, so absence from it proves nothing.
		if s.conn.checkAccess(ctx, t.path) == nil {
			return t.path, nil
		}
		return t.id, nil
	}
	return t.path, nil
}
