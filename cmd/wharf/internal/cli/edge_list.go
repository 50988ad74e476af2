package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

func newEdgeListCommand(f *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the edges of the workspace (NAME TYPE PHASE CONNECTED AGENT AGE)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			ec, err := edgeClient(c)
			if err != nil {
				return err
			}
			list, err := ec.List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return notServed(err, c)
			}
			edges := make([]edgesv1.Edge, 0, len(list.Items))
			for i := range list.Items {
				e, err := toEdge(&list.Items[i])
				if err != nil {
					return err
				}
				edges = append(edges, *e)
			}
			if len(edges) == 0 {
				// kubectl's wording, on stderr, so scripts reading stdout see nothing.
				fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
				return nil
			}
			return writeEdgeTable(cmd.OutOrStdout(), edges, time.Now())
		},
	}
}

// writeEdgeTable prints edges the way `kubectl get edges` prints the CRD's
// printer columns: same tabwriter settings as kubectl, empty cells for
// unset fields, AGE as kubectl's HumanDuration, rows by name.
func writeEdgeTable(w io.Writer, edges []edgesv1.Edge, now time.Time) error {
	sort.Slice(edges, func(i, j int) bool { return edges[i].Name < edges[j].Name })
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tPHASE\tCONNECTED\tAGENT\tAGE")
	for _, e := range edges {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Spec.Type, e.Status.Phase,
			connectedCell(&e), e.Status.AgentVersion, ageCell(e.CreationTimestamp, now))
	}
	return tw.Flush()
}

// connectedCell is the Connected condition's status ("True"/"False"), as
// the CRD's CONNECTED printer column selects it; "" when absent.
func connectedCell(e *edgesv1.Edge) string {
	if c := meta.FindStatusCondition(e.Status.Conditions, edgesv1.ConditionConnected); c != nil {
		return string(c.Status)
	}
	return ""
}

// ageCell mirrors the API server's table AGE cell.
func ageCell(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func newEdgeGetCommand(f *hubFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get <name> [-o yaml|json]",
		Short: "Show one edge",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "yaml" && output != "json" {
				return fmt.Errorf("unsupported output format %q: use yaml or json", output)
			}
			c, err := f.connect()
			if err != nil {
				return err
			}
			ec, err := edgeClient(c)
			if err != nil {
				return err
			}
			u, err := ec.Get(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return fromServer(err)
			}
			if output == "" {
				e, err := toEdge(u)
				if err != nil {
					return err
				}
				return writeEdgeTable(cmd.OutOrStdout(), []edgesv1.Edge{*e}, time.Now())
			}
			return writeObject(cmd.OutOrStdout(), u, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: yaml or json (default: a table row)")
	return cmd
}

// writeObject prints u as kubectl -o yaml|json does.
func writeObject(w io.Writer, u *unstructured.Unstructured, format string) error {
	var b []byte
	var err error
	if format == "json" {
		if b, err = json.MarshalIndent(u.Object, "", "    "); err == nil {
			b = append(b, '\n')
		}
	} else {
		b, err = yaml.Marshal(u.Object)
	}
	if err != nil {
		return fmt.Errorf("encoding edge: %w", err)
	}
	_, err = w.Write(b)
	return err
}
