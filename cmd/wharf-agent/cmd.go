package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/agent"
	"github.com/wharfhub/wharf/revdial"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "wharf-agent",
		Short:         "Connect a cluster or server behind NAT to a Wharf hub as an edge",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// klog's flags (-v, --logtostderr, …) on every command.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	root.PersistentFlags().AddGoFlagSet(fs)
	root.AddCommand(newRun(), newVersion())
	return root
}

func agentVersion() string { return version.Get().GitVersion }

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the agent's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), agentVersion())
			return err
		},
	}
}

type runOptions struct {
	join, joinFile, stateDir    string
	kubeconfig, sshAddr         string
	identity, prefix            string
	backoffBase, backoffMax     time.Duration
	readDeadline, handshakeWait time.Duration
	parts                       bundleParts
}

func newRun() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --state-dir <dir> [--join <bundle> | --join-file <file>]",
		Short: "Join (first run) and keep the edge's tunnel to the hub open",
		Long: `run joins the edge with a join bundle on the first run, saves the hub's
address, its pinned CA and the agent credential in --state-dir, and then keeps
a tunnel to the hub open, reconnecting with backoff. Later runs need only
--state-dir. Re-running the printed join command is harmless.

The agent opens no listening socket.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.join, "join", "", "join bundle (wharf-join-v1.…) printed by `wharf edge create`")
	f.StringVar(&o.joinFile, "join-file", "", "file holding the join bundle")
	f.StringVar(&o.stateDir, "state-dir", "", "directory for the agent's state and credential (created 0700)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the edge cluster (kubernetes edges); default: KUBECONFIG, ~/.kube/config, then in-cluster")
	o.parts.addFlags(f)
	f.StringVar(&o.sshAddr, "ssh-addr", agent.DefaultSSHAddr, "address of the edge's sshd (server edges)")
	f.StringVar(&o.identity, "identity", string(agent.IdentityImpersonate), "whose identity the edge API server sees: impersonate (each caller) or agent (the agent's own)")
	f.StringVar(&o.prefix, "impersonate-prefix", "", "prefix for impersonated user and group names")
	// Test tuning: shorter intervals than the spec's, hidden from users.
	f.DurationVar(&o.backoffBase, "backoff-base", 0, "first reconnect backoff ceiling (default 1s)")
	f.DurationVar(&o.backoffMax, "backoff-max", 0, "longest reconnect backoff (default 30s)")
	f.DurationVar(&o.readDeadline, "tunnel-read-deadline", 0, "declare the tunnel dead after this long without a message (default 60s)")
	f.DurationVar(&o.handshakeWait, "handshake-timeout", 0, "bound on one websocket handshake (default 10s)")
	for _, n := range []string{"backoff-base", "backoff-max", "tunnel-read-deadline", "handshake-timeout"} {
		_ = f.MarkHidden(n)
	}
	return cmd
}

func (o *runOptions) run(cmd *cobra.Command) error {
	if o.join != "" && o.joinFile != "" {
		return errors.New("--join and --join-file are exclusive")
	}
	join := o.join
	if o.joinFile != "" {
		raw, err := os.ReadFile(o.joinFile)
		if err != nil {
			return fmt.Errorf("--join-file: %w", err)
		}
		join = strings.TrimSpace(string(raw))
	}
	if o.parts.given() {
		if join != "" {
			return errors.New("--join/--join-file and --hub-url/--hub-ca-file/--cluster/--edge/--join-token-file are exclusive")
		}
		var err error
		if join, err = o.parts.encode(); err != nil {
			return err
		}
	}
	if o.stateDir == "" {
		return errors.New("--state-dir is required")
	}
	return agent.Run(cmd.Context(), agent.Config{
		StateDir:          o.stateDir,
		Join:              join,
		Kubeconfig:        o.kubeconfig,
		SSHAddr:           o.sshAddr,
		Identity:          agent.IdentityMode(o.identity),
		ImpersonatePrefix: o.prefix,
		Version:           agentVersion(),
		Options:           revdial.Options{ReadDeadline: o.readDeadline, HandshakeTimeout: o.handshakeWait},
		Backoff:           revdial.Backoff{Base: o.backoffBase, Max: o.backoffMax},
	})
}
