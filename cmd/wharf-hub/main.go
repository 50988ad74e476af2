// Command wharf-hub runs the Wharf hub: a kcp-style multi-workspace
// Kubernetes API server.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/server"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := server.NewOptions()
	cmd := &cobra.Command{
		Use:          "wharf-hub",
		Short:        "Run the Wharf multi-workspace hub",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if errs := o.Validate(); len(errs) > 0 {
				return utilerrors.NewAggregate(errs)
			}
			ctx := genericapiserver.SetupSignalContext()
			cfg, err := o.Config(ctx)
			if err != nil {
				return err
			}
			hub, err := cfg.Complete().New(ctx)
			if err != nil {
				return err
			}
			fmt.Printf("Wharf hub serving at %s\n", cfg.Extra.ExternalURL)
			fmt.Printf("Admin kubeconfig: %s\n", cfg.Extra.KubeconfigPath)
			fmt.Printf("Try:  kubectl --kubeconfig=%s get namespaces\n", cfg.Extra.KubeconfigPath)
			fmt.Printf("      kubectl --kubeconfig=%s create -f - <<<'{\"apiVersion\":\"tenancy.wharf.dev/v1alpha1\",\"kind\":\"Workspace\",\"metadata\":{\"name\":\"team-a\"}}'\n", cfg.Extra.KubeconfigPath)
			fmt.Printf("      kubectl --kubeconfig=%s --server=%s/clusters/root:team-a get namespaces\n", cfg.Extra.KubeconfigPath, cfg.Extra.ExternalURL)
			printProviderHint(os.Stdout, o, cfg.Extra.ExternalURL)
			printPortalHint(os.Stdout, o, cfg.Extra.ExternalURL)
			return hub.Run(ctx)
		},
	}
	cmd.AddCommand(newSnapshotCommand(), newProbeCommand())
	fss := o.Flags()
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name())
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	// 0 columns: flag help is printed unwrapped, whatever the terminal.
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
	klog.InitFlags(nil)
	return cmd
}
