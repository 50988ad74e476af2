package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// NewRoot returns the wharf command.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "wharf",
		Short:         "Log in to a Wharf hub and use it with kubectl",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newLoginCommand(), newCredentialCommand(), newEdgeCommand(), newKubeconfigCommand(), newSSHCommand(), newSSHProxyCommand(), newSSHConfigCommand(), newWSCommand())
	return root
}

// defaultCacheDir is ~/.wharf/cache.
func defaultCacheDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".wharf", "cache")
	}
	return filepath.Join(home, ".wharf", "cache")
}
