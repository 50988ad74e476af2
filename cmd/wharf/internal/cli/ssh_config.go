package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newSSHConfigCommand() *cobra.Command {
	f := &hubFlags{}
	var knownHosts bool
	cmd := &cobra.Command{
		Use:   "ssh-config <edge>",
		Short: "Print an ~/.ssh/config Host block for a server edge (or, with --known-hosts, its pinned key)",
		Long: `ssh-config prints a Host block that reaches the edge with plain ssh:

  wharf ssh-config web-1 >> ~/.ssh/config
  wharf ssh-config web-1 --known-hosts >> ~/.ssh/known_hosts
  ssh web-1 uptime

The block pins the edge's host key through HostKeyAlias and
StrictHostKeyChecking; the second command adds that key.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			e, cluster, known, err := pinnedServerEdge(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if knownHosts {
				_, err := io.WriteString(cmd.OutOrStdout(), known)
				return err
			}
			proxy, err := proxyCommand(c, e.Name, cluster)
			if err != nil {
				return err
			}
			writeSSHConfig(cmd.OutOrStdout(), e.Name, proxy, hostKeyAlias(cluster, e.Name))
			return nil
		},
	}
	f.add(cmd.Flags())
	cmd.Flags().BoolVar(&knownHosts, "known-hosts", false, "print the edge's known_hosts line instead of the Host block")
	return cmd
}

// writeSSHConfig prints the Host block; proxy is already %-escaped.
func writeSSHConfig(w io.Writer, name, proxy, alias string) {
	fmt.Fprintf(w, "# Wharf edge %s; add its key with: wharf ssh-config %s --known-hosts >> ~/.ssh/known_hosts\n", name, name)
	fmt.Fprintf(w, "Host %s\n", name)
	fmt.Fprintf(w, "    ProxyCommand %s\n", proxy)
	fmt.Fprintf(w, "    HostKeyAlias %s\n", alias)
	fmt.Fprintf(w, "    StrictHostKeyChecking yes\n")
	fmt.Fprintf(w, "    CheckHostIP no\n")
	fmt.Fprintf(w, "    ServerAliveInterval 15\n")
}
