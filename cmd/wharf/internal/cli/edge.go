package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// clusterAnnotation is the hub's logical cluster id on every stored object
// (the same key as sdk/clusters.Annotation; not imported to keep the CLI
// free of the informer machinery).
const clusterAnnotation = "wharf.dev/cluster"

// edgeGR names edges in errors the way the API server does.
var edgeGR = schema.GroupResource{Group: edgesv1.GroupName, Resource: edgesv1.Resource}

// newEdgeCommand is `wharf edge`.
func newEdgeCommand() *cobra.Command {
	f := &hubFlags{}
	cmd := &cobra.Command{
		Use:   "edge",
		Short: "Create, join and inspect edges (clusters and servers behind NAT)",
		Long: `edge manages the Edges of a workspace (edges.wharf.dev/v1alpha1). An edge is
a Kubernetes cluster or an SSH server behind NAT whose agent (wharf-agent)
dials out to the hub. "wharf edge create" prints the command to run on the
edge machine; "wharf kubeconfig edge" and "wharf ssh" reach it afterwards.`,
	}
	f.add(cmd.PersistentFlags())
	cmd.AddCommand(newEdgeCreateCommand(f), newEdgeJoinCommandCommand(f),
		newEdgeListCommand(f), newEdgeGetCommand(f), newEdgeDeleteCommand(f))
	return cmd
}

// edgeClient is the resource interface for edges in the chosen workspace.
func edgeClient(c *hubConn) (dynamic.ResourceInterface, error) {
	d, err := c.dynamic()
	if err != nil {
		return nil, err
	}
	return d.Resource(edgesv1.GVR), nil
}

// getEdge fetches one edge and converts it to the typed form.
func getEdge(ctx context.Context, c *hubConn, name string) (*edgesv1.Edge, error) {
	ec, err := edgeClient(c)
	if err != nil {
		return nil, err
	}
	u, err := ec.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fromServer(err)
	}
	return toEdge(u)
}

func toEdge(u *unstructured.Unstructured) (*edgesv1.Edge, error) {
	var e edgesv1.Edge
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e); err != nil {
		return nil, fmt.Errorf("decoding edge %q: %w", u.GetName(), err)
	}
	return &e, nil
}

// edgeCluster is the edge's logical cluster id, which the hub stamps on
// every stored object; the provider's paths are keyed on it.
func edgeCluster(e *edgesv1.Edge) (string, error) {
	id := e.Annotations[clusterAnnotation]
	if id == "" {
		return "", fmt.Errorf("edge %q carries no %s annotation; is this a Wharf hub?", e.Name, clusterAnnotation)
	}
	return id, nil
}

// newEdgeObject is the Edge `edge create` submits.
func newEdgeObject(name string, typ edgesv1.EdgeType, sshPort int32) (*unstructured.Unstructured, error) {
	switch typ {
	case edgesv1.TypeKubernetes:
		if sshPort != 0 {
			return nil, fmt.Errorf("--ssh-port is only for --type %s", edgesv1.TypeServer)
		}
	case edgesv1.TypeServer:
		if sshPort < 0 || sshPort > 65535 {
			return nil, fmt.Errorf("--ssh-port %d is not a port", sshPort)
		}
	default:
		return nil, fmt.Errorf("--type must be %s or %s, not %q", edgesv1.TypeKubernetes, edgesv1.TypeServer, typ)
	}
	e := edgesv1.Edge{
		TypeMeta:   metav1.TypeMeta{APIVersion: edgesv1.SchemeGroupVersion.String(), Kind: edgesv1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       edgesv1.EdgeSpec{Type: typ},
	}
	if typ == edgesv1.TypeServer && sshPort != 0 {
		e.Spec.Server = &edgesv1.ServerSpec{SSHPort: sshPort}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
	if err != nil {
		return nil, fmt.Errorf("encoding edge: %w", err)
	}
	// An empty status is the provider's to fill; do not send one.
	delete(obj, "status")
	return &unstructured.Unstructured{Object: obj}, nil
}

type edgeCreateOptions struct {
	typ     string
	sshPort int32
	wait    bool
	timeout time.Duration
}

func newEdgeCreateCommand(f *hubFlags) *cobra.Command {
	o := edgeCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create <name> --type kubernetes|server",
		Short: "Create an edge and print the command that joins it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			obj, err := newEdgeObject(args[0], edgesv1.EdgeType(o.typ), o.sshPort)
			if err != nil {
				return err
			}
			ec, err := edgeClient(c)
			if err != nil {
				return err
			}
			created, err := ec.Create(cmd.Context(), obj, metav1.CreateOptions{})
			if err != nil {
				return notServed(err, c)
			}
			e, err := toEdge(created)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "edge.%s/%s created\n", edgesv1.GroupName, e.Name)
			if err := printJoin(cmd.Context(), cmd.OutOrStdout(), c, e); err != nil {
				// The Edge exists now; say how to get its command later.
				return fmt.Errorf("edge %q was created, but no join command could be printed (retry with \"wharf edge join-command %s\"): %w", e.Name, e.Name, err)
			}
			if !o.wait {
				return nil
			}
			return waitReady(cmd.Context(), cmd.ErrOrStderr(), c, e.Name, o.timeout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.typ, "type", "", "edge type: kubernetes (a cluster) or server (a machine with sshd)")
	fl.Int32Var(&o.sshPort, "ssh-port", 0, "server edges: the sshd port on the edge machine (default 22)")
	fl.BoolVar(&o.wait, "wait", false, "wait until the edge is Ready (its agent connected)")
	fl.DurationVar(&o.timeout, "timeout", 10*time.Minute, "with --wait: give up after this long")
	_ = cmd.MarkFlagRequired("type")
	return cmd
}

func newEdgeJoinCommandCommand(f *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "join-command <name>",
		Short: "Print an edge's join command again, with a fresh join token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			e, err := getEdge(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return printJoin(cmd.Context(), cmd.OutOrStdout(), c, e)
		},
	}
}

func newEdgeDeleteCommand(f *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete an edge (revokes its agent's credential)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			ec, err := edgeClient(c)
			if err != nil {
				return err
			}
			if err := ec.Delete(cmd.Context(), args[0], metav1.DeleteOptions{}); err != nil {
				return fromServer(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "edge.%s %q deleted\n", edgesv1.GroupName, args[0])
			return nil
		},
	}
}
