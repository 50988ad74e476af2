package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

type sshOptions struct {
	login, identity string
	options         []string
	sshBinary       string
}

func newSSHCommand() *cobra.Command {
	f := &hubFlags{}
	o := sshOptions{}
	cmd := &cobra.Command{
		Use:   "ssh <edge> [-l user] [-i key] [-o option]... [-- command...]",
		Short: "SSH to a server edge, end to end through the hub, with its host key pinned",
		Long: `ssh runs the system ssh with "wharf ssh-proxy" as its ProxyCommand, so your
~/.ssh/config, agent and keys work as usual, and pins the host key the edge
reported (status.sshHostKey): a host with any other key is refused. It exits
with the remote command's status.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.connect()
			if err != nil {
				return err
			}
			e, cluster, known, err := pinnedServerEdge(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			kh, err := os.CreateTemp("", "wharf-known-hosts-*")
			if err != nil {
				return fmt.Errorf("creating the known-hosts file: %w", err)
			}
			defer os.Remove(kh.Name())
			// CreateTemp makes the file 0600.
			if _, err := kh.WriteString(known); err != nil {
				kh.Close()
				return fmt.Errorf("writing the known-hosts file: %w", err)
			}
			if err := kh.Close(); err != nil {
				return fmt.Errorf("writing the known-hosts file: %w", err)
			}
			proxy, err := proxyCommand(c, e.Name, cluster)
			if err != nil {
				return err
			}
			argv := sshArgs(o, proxy, hostKeyAlias(cluster, e.Name), kh.Name(), args[1:])
			bin := o.sshBinary
			if bin == "" {
				bin = "ssh"
			}
			run := exec.Command(bin, argv...)
			run.Stdin, run.Stdout, run.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			// ssh handles Ctrl-C itself (the terminal signals the whole
			// foreground group); main's signal context keeps us alive to
			// pass its exit status on.
			err = run.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &exitError{Code: ee.ExitCode()}
			}
			if err != nil {
				return fmt.Errorf("running %s: %w", bin, err)
			}
			return nil
		},
	}
	f.add(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVarP(&o.login, "login", "l", "", "remote user name (ssh -l)")
	fl.StringVarP(&o.identity, "identity", "i", "", "private key file (ssh -i)")
	fl.StringArrayVarP(&o.options, "ssh-option", "o", nil, "extra ssh option, e.g. -o ForwardAgent=yes (repeatable)")
	fl.StringVar(&o.sshBinary, "ssh", "", "ssh binary to run (default: ssh from $PATH)")
	return cmd
}

// hostKeyAlias is a stable name for the edge in known_hosts: its cluster
// id and name, so edges of the same name in two workspaces never share a
// pinned key.
func hostKeyAlias(cluster, name string) string {
	return "wharf-edge." + cluster + "." + name
}

// pinnedServerEdge fetches a server edge with its cluster id and the
// known_hosts line that pins its host key: what ssh and ssh-config need.
func pinnedServerEdge(ctx context.Context, c *hubConn, name string) (e *edgesv1.Edge, cluster, known string, err error) {
	if e, err = getServerEdge(ctx, c, name); err != nil {
		return nil, "", "", err
	}
	if cluster, err = edgeCluster(e); err != nil {
		return nil, "", "", err
	}
	if known, err = knownHostsLine(e, cluster); err != nil {
		return nil, "", "", err
	}
	return e, cluster, known, nil
}

// knownHostsLine is "<alias> <key>\n" for the edge's reported host key.
// The key is parsed and re-marshalled, so a status value can only ever be
// one key: no markers (@cert-authority), no second line, no options.
func knownHostsLine(e *edgesv1.Edge, cluster string) (string, error) {
	if strings.TrimSpace(e.Status.SSHHostKey) == "" {
		return "", fmt.Errorf("edge %q has not reported its SSH host key (status.sshHostKey is empty); refusing to connect to an unverified host", e.Name)
	}
	pk, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(e.Status.SSHHostKey))
	if err != nil || strings.TrimSpace(string(rest)) != "" {
		return "", fmt.Errorf("edge %q: status.sshHostKey is not one SSH public key; refusing to connect", e.Name)
	}
	return hostKeyAlias(cluster, e.Name) + " " + string(ssh.MarshalAuthorizedKey(pk)), nil
}

// proxyCommand is this executable's ssh-proxy invocation, quoted for the
// shell ssh runs ProxyCommand with and with "%" escaped from ssh's own
// token expansion. It names the resolved context and the edge's cluster
// id, so it reaches the same edge whatever the current context becomes.
func proxyCommand(c *hubConn, edge, cluster string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating the wharf binary: %w", err)
	}
	words := []string{exe, "ssh-proxy", edge, "-w", cluster}
	if c.flags.kubeconfig != "" {
		// ssh-config blocks run from any directory.
		kc, err := filepath.Abs(c.flags.kubeconfig)
		if err != nil {
			return "", fmt.Errorf("resolving --kubeconfig: %w", err)
		}
		words = append(words, "--kubeconfig", kc)
	}
	if c.context != "" {
		words = append(words, "--context", c.context)
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = strings.ReplaceAll(shellQuote(w), "%", "%%")
	}
	return strings.Join(quoted, " "), nil
}

// shellQuote returns s as one POSIX shell word.
func shellQuote(s string) string {
	if s != "" && shellSafeRE.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sshArgs is the ssh command line. The pinning options come first, and
// ssh keeps the first value it sees for an option, so -o passthrough can
// add options but not loosen host-key checking.
func sshArgs(o sshOptions, proxy, alias, knownHosts string, command []string) []string {
	argv := []string{
		"-o", "ProxyCommand=" + proxy,
		"-o", "HostKeyAlias=" + alias,
		"-o", "UserKnownHostsFile=" + knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UpdateHostKeys=no",
		"-o", "CheckHostIP=no",
	}
	for _, opt := range o.options {
		argv = append(argv, "-o", opt)
	}
	argv = append(argv, "-o", "ServerAliveInterval=15")
	if o.login != "" {
		argv = append(argv, "-l", o.login)
	}
	if o.identity != "" {
		argv = append(argv, "-i", o.identity)
	}
	argv = append(argv, alias)
	if len(command) > 0 {
		argv = append(argv, "--")
		argv = append(argv, command...)
	}
	return argv
}
