package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
)

// workspacesGVR is the Workspace resource: children of the workspace the
// request addresses.
var workspacesGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")

// defaultWorkspaceType is kcp's default type. The hub's Workspace has no
// type field, so every workspace is of this one type.
const defaultWorkspaceType = "universal"

func newWSTreeCommand(f *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "tree",
		Short: "Print the workspaces you may access as a tree",
		Long: `tree prints every workspace the hub lets you access through a grant that
names you or one of your own groups (those /api/whoami lists: a workspace
opened to every authenticated user is not, though "use" enters it by path).
Ancestors you may not access are shown only as the path that leads to
yours; the current workspace is marked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadWS(cmd.Context(), *f)
			if err != nil {
				return err
			}
			who, err := s.whoami(cmd.Context())
			if err != nil {
				return err
			}
			paths := make([]string, 0, len(who.Workspaces))
			for _, w := range who.Workspaces {
				paths = append(paths, w.Path)
			}
			writeTree(cmd.OutOrStdout(), paths, s.current)
			if who.Truncated {
				fmt.Fprintf(cmd.ErrOrStderr(), "The hub listed only the first %d workspaces.\n", len(paths))
			}
			return nil
		},
	}
}

// treeNode is one path segment of the tree.
type treeNode struct {
	name     string
	path     string
	children map[string]*treeNode
}

// writeTree prints paths as kcp's `kubectl ws tree` does, with box-drawing
// branches, children sorted by name, and " (current)" after cur.
func writeTree(out io.Writer, paths []string, cur string) {
	top := &treeNode{children: map[string]*treeNode{}}
	for _, p := range paths {
		n := top
		for i, seg := range strings.Split(p, ":") {
			c := n.children[seg]
			if c == nil {
				c = &treeNode{name: seg, path: strings.Join(strings.Split(p, ":")[:i+1], ":"), children: map[string]*treeNode{}}
				n.children[seg] = c
			}
			n = c
		}
	}
	fmt.Fprintln(out, ".")
	writeChildren(out, top, "", cur)
}

func writeChildren(out io.Writer, n *treeNode, indent, cur string) {
	names := make([]string, 0, len(n.children))
	for k := range n.children {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		c := n.children[k]
		branch, next := "├── ", "│   "
		if i == len(names)-1 {
			branch, next = "└── ", "    "
		}
		mark := ""
		if c.path == cur {
			mark = " (current)"
		}
		fmt.Fprintf(out, "%s%s%s%s\n", indent, branch, c.name, mark)
		writeChildren(out, c, indent+next, cur)
	}
}

type wsCreateOptions struct {
	enter   bool
	typ     string
	timeout time.Duration
}

func newWSCreateCommand(f *hubFlags) *cobra.Command {
	o := wsCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create <name> [--enter]",
		Short: "Create a child of the current workspace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), *f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.enter, "enter", false, "wait until it is ready and make it the current workspace")
	fl.StringVar(&o.typ, "type", defaultWorkspaceType, "workspace type; this hub serves only "+defaultWorkspaceType)
	fl.DurationVar(&o.timeout, "timeout", 2*time.Minute, "with --enter: give up waiting for Ready after this long")
	return cmd
}

func (o wsCreateOptions) run(ctx context.Context, out io.Writer, f hubFlags, name string) error {
	if o.typ != defaultWorkspaceType && o.typ != "root:"+defaultWorkspaceType {
		return fmt.Errorf("workspace type %q is not served: this hub has only the type %q", o.typ, defaultWorkspaceType)
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("invalid workspace name %q: %s", name, strings.Join(msgs, "; "))
	}
	s, err := loadWS(ctx, f)
	if err != nil {
		return err
	}
	wc, err := s.workspaces()
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": tenancyv1alpha1.SchemeGroupVersion.String(), "kind": "Workspace",
		"metadata": map[string]interface{}{"name": name},
	}}
	if _, err := wc.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return s.workspaceError(err)
	}
	fmt.Fprintf(out, "Workspace %q created.\n", name)
	if !o.enter {
		return nil
	}
	fmt.Fprintln(out, "Waiting for it to be ready...")
	ws, err := waitWorkspaceReady(ctx, wc, name, o.timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Workspace %q is ready to use.\n", name)
	return wsUse(ctx, out, f, ws.Status.Path)
}

// waitWorkspaceReady polls the Workspace until its Ready condition is True.
func waitWorkspaceReady(ctx context.Context, wc dynamic.ResourceInterface, name string, timeout time.Duration) (*tenancyv1alpha1.Workspace, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		u, err := wc.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			var ws tenancyv1alpha1.Workspace
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ws); err != nil {
				return nil, fmt.Errorf("decoding workspace %q: %w", name, err)
			}
			if ws.Status.Phase == tenancyv1alpha1.WorkspacePhaseReady && ws.Status.Path != "" {
				return &ws, nil
			}
		} else if !apierrors.IsNotFound(err) {
			return nil, fromServer(err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("workspace %q is not ready after %s", name, timeout)
		case <-t.C:
		}
	}
}

func newWSDeleteCommand(f *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a child of the current workspace (and everything in it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := loadWS(cmd.Context(), *f)
			if err != nil {
				return err
			}
			wc, err := s.workspaces()
			if err != nil {
				return err
			}
			if err := wc.Delete(cmd.Context(), args[0], metav1.DeleteOptions{}); err != nil {
				if apierrors.IsNotFound(err) {
					return &errNoWorkspace{name: s.childPath(args[0])}
				}
				return s.workspaceError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Workspace %q deleted.\n", args[0])
			return nil
		},
	}
}

// workspaces is the Workspace client of the current workspace.
func (s *wsState) workspaces() (dynamic.ResourceInterface, error) {
	d, err := s.conn.dynamic()
	if err != nil {
		return nil, err
	}
	return d.Resource(workspacesGVR), nil
}

// childPath names a child of the current workspace in errors.
func (s *wsState) childPath(name string) string {
	if isPath(s.current) {
		return s.current + ":" + name
	}
	return name
}

// workspaceError words a failed create: a current workspace the caller may
// not use reads as errNoWorkspace; anything else (AlreadyExists, a
// Forbidden naming the verb, invalid names) as kubectl prints it.
func (s *wsState) workspaceError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) && strings.Contains(st.Status().Message, "workspace access not permitted") {
		return &errNoWorkspace{name: s.current}
	}
	return fromServer(err)
}
