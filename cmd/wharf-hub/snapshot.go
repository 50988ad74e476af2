package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/grpclog"

	wetcd "github.com/wharfhub/wharf/hub/etcd"
)

// newSnapshotCommand is `wharf-hub snapshot save|restore`: backups of the
// store with etcd's own snapshot API.
func newSnapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save and restore snapshots of the hub's etcd",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSnapshotSave(), newSnapshotRestore())
	// The hub's root command prints its own flag sets as usage; these
	// commands have their own flags, printed with cobra's default usage.
	plain := &cobra.Command{}
	for _, c := range append(cmd.Commands(), cmd) {
		c.SetUsageFunc(plain.UsageFunc())
		c.SetHelpFunc(plain.HelpFunc())
	}
	return cmd
}

type saveOptions struct {
	dataDir                   string
	servers                   []string
	caFile, certFile, keyFile string
	timeout                   time.Duration
}

func newSnapshotSave() *cobra.Command {
	o := &saveOptions{}
	cmd := &cobra.Command{
		Use:   "save <file> (--data-dir <dir> | --etcd-servers <urls>)",
		Short: "Save a snapshot of a running hub's embedded etcd, or of an external etcd",
		Long: `save writes a point-in-time snapshot of the store to <file> (mode 0600: it
holds every Secret of every workspace and the hub's signing keys).

--data-dir names the data dir of a running hub on embedded etcd; its member
is reached through the socket there, so run this as the hub's user.
--etcd-servers (with --etcd-cafile, --etcd-certfile, --etcd-keyfile, as the
hub takes them) saves an external etcd cluster instead: list every member;
the snapshot is streamed from one that answers a quorum read, so members
that are down or cut off are passed over. When none answers, the error
names each member's cause.`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		// main prints the error once.
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "", "data dir of a running hub whose embedded etcd to save")
	f.StringSliceVar(&o.servers, "etcd-servers", nil, "endpoints of an external etcd cluster to save")
	f.StringVar(&o.caFile, "etcd-cafile", "", "SSL Certificate Authority file used to secure etcd communication")
	f.StringVar(&o.certFile, "etcd-certfile", "", "SSL certification file used to secure etcd communication")
	f.StringVar(&o.keyFile, "etcd-keyfile", "", "SSL key file used to secure etcd communication")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole save")
	return cmd
}

func (o *saveOptions) clientConfig() (clientv3.Config, error) {
	switch {
	case o.dataDir != "" && len(o.servers) > 0:
		return clientv3.Config{}, errors.New("--data-dir and --etcd-servers are exclusive")
	case o.dataDir != "":
		u, err := wetcd.EmbeddedClientURL(o.dataDir)
		if err != nil {
			return clientv3.Config{}, err
		}
		return clientv3.Config{Endpoints: []string{u}, DialTimeout: 10 * time.Second}, nil
	case len(o.servers) > 0:
		var tlsCfg *tls.Config
		if o.caFile != "" || o.certFile != "" || o.keyFile != "" {
			info := transport.TLSInfo{CertFile: o.certFile, KeyFile: o.keyFile, TrustedCAFile: o.caFile}
			var err error
			if tlsCfg, err = info.ClientConfig(); err != nil {
				return clientv3.Config{}, fmt.Errorf("etcd client TLS: %w", err)
			}
		}
		// etcd's snapshot API streams one member's copy; SaveSnapshot picks
		// a member in quorum. DialTimeout bounds each member's check.
		return clientv3.Config{Endpoints: o.servers, TLS: tlsCfg, DialTimeout: 10 * time.Second}, nil
	default:
		return clientv3.Config{}, errors.New("--data-dir or --etcd-servers is required")
	}
}

func (o *saveOptions) run(cmd *cobra.Command, file string) error {
	cfg, err := o.clientConfig()
	if err != nil {
		return err
	}
	// The apiserver's etcd storage routes gRPC's logs to klog; here its
	// retry warnings, once per attempt and member, would bury the error,
	// which names each member's cause itself.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	info, err := wetcd.SaveSnapshot(ctx, cfg, file)
	if errors.Is(err, wetcd.ErrClientCertificateRequired) && o.certFile == "" {
		return fmt.Errorf("%w (give the client certificate with --etcd-certfile and --etcd-keyfile, as to the hub)", err)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "Saved %s: revision %d, %d keys, %d bytes (etcd %s)\n", file, info.Revision, info.Keys, info.Size, info.Version)
	return err
}

func newSnapshotRestore() *cobra.Command {
	var dataDir string
	var bump uint64
	cmd := &cobra.Command{
		Use:   "restore <file> --data-dir <new dir>",
		Short: "Make a new hub data dir from a snapshot",
		Long: `restore checks the snapshot's integrity and writes an embedded etcd member
holding it under --data-dir, which must not hold one yet. Start a hub with
that --data-dir: it serves every workspace and object of the snapshot.
Certificates, the admin token and admin.kubeconfig are made afresh at that
start; service-account keys and the replicas' shared secret live in etcd
and come back with it.

To restore an external etcd cluster, use etcdutl snapshot restore on each
member as etcd's documentation describes.`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		// main prints the error once.
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return errors.New("--data-dir is required")
			}
			if err := wetcd.Restore(args[0], dataDir, wetcd.RestoreOptions{RevisionBump: bump}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "Restored %s into %s; start the hub with --data-dir %s\n", args[0], dataDir, dataDir)
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "new data dir to restore into")
	cmd.Flags().Uint64Var(&bump, "bump-revision", 1_000_000_000,
		"raise the store's revision by this much and mark older revisions compacted, so clients of the old hub relist instead of seeing resourceVersions go back (0: keep revisions)")
	return cmd
}
