package cli

import (
	"fmt"
	"net/url"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// newKubeconfigCommand is `wharf kubeconfig`, the home of kubeconfigs the
// CLI derives from a hub context.
func newKubeconfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print kubeconfigs derived from the hub context",
	}
	cmd.AddCommand(newKubeconfigEdgeCommand())
	return cmd
}

func newKubeconfigEdgeCommand() *cobra.Command {
	f := &hubFlags{}
	var out string
	cmd := &cobra.Command{
		Use:   "edge <name> [-o file]",
		Short: "Print a kubeconfig that reaches a kubernetes edge's cluster through the hub",
		Long: `kubeconfig edge prints a kubeconfig whose server is the edge's status.URL on
the hub, with the hub's CA and your own credential from the current context
(token, client certificate or the "wharf credential" exec plugin). The
edge cluster sees you, not the agent, so its own RBAC applies:

  kubectl --kubeconfig <(wharf kubeconfig edge lab) get namespaces`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			e, err := getEdge(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if e.Spec.Type == edgesv1.TypeServer {
				return fmt.Errorf("edge %q is a server edge; reach it with \"wharf ssh %s\"", e.Name, e.Name)
			}
			server, err := edgeURL(c, e)
			if err != nil {
				return err
			}
			ca, err := c.caPEM()
			if err != nil {
				return err
			}
			b, err := clientcmd.Write(*edgeKubeconfig(e.Name, server, ca, c.user))
			if err != nil {
				return fmt.Errorf("encoding the kubeconfig: %w", err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return writePrivate(out, b)
		},
	}
	f.add(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the kubeconfig to this file (mode 0600) instead of stdout")
	return cmd
}

// edgeURL is the edge's status.URL, absolute (a provider may publish a
// path relative to the hub). It is an error while the edge has never
// connected, and whenever the URL is anything but this edge's own egress
// path on the hub the context talks to: the CLI sends the caller's hub
// credential there, and an admin of the workspace can write an Edge's
// status, so a URL pointing elsewhere (another host, or another
// provider's backend, which would receive the Authorization header) must
// never be followed.
func edgeURL(c *hubConn, e *edgesv1.Edge) (string, error) {
	if e.Status.URL == "" {
		return "", fmt.Errorf("edge %q has not connected yet (its status.URL is empty); run its join command on the edge machine, then \"wharf edge get %s\"", e.Name, e.Name)
	}
	cluster, err := edgeCluster(e)
	if err != nil {
		return "", err
	}
	root, err := c.hubRoot()
	if err != nil {
		return "", err
	}
	base, _ := url.Parse(root)
	u, err := url.Parse(e.Status.URL)
	if err != nil {
		return "", fmt.Errorf("edge %q has an invalid status.URL: %w", e.Name, err)
	}
	u = base.ResolveReference(u)
	sub := "/k8s"
	if e.Spec.Type == edgesv1.TypeServer {
		sub = "/ssh"
	}
	want := protocol.BackendPrefix + protocol.EgressBase(cluster, e.Name) + sub
	if u.Scheme != base.Scheme || u.Host != base.Host || u.Path != want || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("edge %q: status.URL %q is not this edge's tunnel on %s; refusing to send your credential there", e.Name, e.Status.URL, root)
	}
	u.Fragment, u.RawPath = "", ""
	return u.String(), nil
}

// edgeKubeconfig is a one-context kubeconfig: server, the hub CA inline
// (the file works anywhere, e.g. through <(...)), and a copy of the
// caller's own user entry as is, so an exec plugin keeps refreshing.
func edgeKubeconfig(name, server string, ca []byte, user *clientcmdapi.AuthInfo) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	id := "wharf-edge-" + name
	cl := clientcmdapi.NewCluster()
	cl.Server = server
	cl.CertificateAuthorityData = append([]byte(nil), ca...)
	cfg.Clusters[id] = cl
	u := clientcmdapi.NewAuthInfo()
	if user != nil {
		u = user.DeepCopy()
		u.LocationOfOrigin = ""
	}
	cfg.AuthInfos[id] = u
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = id, id
	cfg.Contexts[id] = kctx
	cfg.CurrentContext = id
	return cfg
}

// writePrivate writes b to path with mode 0600, tightening an existing
// file's mode too: the file holds the caller's credential.
func writePrivate(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
