// Command wharf-provider-tenant-filter is the tenant filter. With no
// arguments it is the hub's plugin (package providers/tenantfilter);
// `standalone [flags]` replaces capsule-proxy (package
// providers/tenantfilter/standalone); `crds` prints the Capsule-compatible
// CRDs for `kubectl apply -f -` on clusters without Capsule.
package main

import (
	"context"
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter"
	"github.com/wharfhub/wharf/providers/tenantfilter/crds"
	"github.com/wharfhub/wharf/providers/tenantfilter/standalone"
	"github.com/wharfhub/wharf/sdk"
)

// usageError marks bad flags or arguments: exit status 2, like flag's.
type usageError struct{ error }

func main() {
	if len(os.Args) == 1 {
		// The hub starts plugins without arguments.
		sdk.Serve(tenantfilter.New())
		return
	}
	err := rootCmd().Execute()
	var ue usageError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		os.Exit(2)
	default:
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "wharf-provider-tenant-filter",
		Short:         "Tenant-filtered views of a shared Kubernetes cluster (plugin, or standalone capsule-proxy replacement)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(*cobra.Command, []string) error {
			sdk.Serve(tenantfilter.New())
			return nil
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(standaloneCmd(), crdsCmd())
	return root
}

func standaloneCmd() *cobra.Command {
	o := standalone.NewOptions()
	cmd := &cobra.Command{
		Use:   "standalone [flags]",
		Short: "Serve capsule-proxy's listener (port 9001, HTTPS) in front of the --kubeconfig cluster",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected arguments %q", args)}
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			cfg, err := o.Config()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background().WithName("tenant-filter"))
			s, err := standalone.New(ctx, cfg)
			if err != nil {
				return err
			}
			return s.Run(ctx)
		},
	}
	o.AddFlags(cmd.Flags())
	var gfs goflag.FlagSet
	klog.InitFlags(&gfs)
	// Only klog's verbosity: the standalone flag list stays capsule-proxy's.
	for _, n := range []string{"v", "vmodule"} {
		cmd.Flags().AddGoFlag(gfs.Lookup(n))
	}
	return cmd
}

func crdsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "crds",
		Short: "Print the Capsule-compatible CRDs (for kubectl apply -f -)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := c.OutOrStdout().Write(crds.Manifest())
			return err
		},
	}
}
