package serviceaccounts

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// Options are the service-account token flags.
type Options struct {
	// KeyFile overrides the hub-wide signing key kept in etcd.
	KeyFile string
	// MaxExpiration caps requested token lifetimes.
	MaxExpiration time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options { return &Options{MaxExpiration: DefaultMaxExpiration} }

// AddFlags registers the --service-account-* flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KeyFile, "service-account-signing-key-file", o.KeyFile, "PEM private key (ECDSA P-256 or Ed25519) that signs service-account tokens. Every replica must use the same. Empty: a key generated once and shared through etcd.")
	fs.DurationVar(&o.MaxExpiration, "service-account-max-token-expiration", o.MaxExpiration, "Longest lifetime a TokenRequest may get; longer requests are cut to it.")
}

// Validate checks the flags.
func (o *Options) Validate() []error {
	var errs []error
	if o.MaxExpiration < MinExpiration {
		errs = append(errs, fmt.Errorf("--service-account-max-token-expiration must be at least %s", MinExpiration))
	}
	if o.KeyFile != "" {
		data, err := os.ReadFile(o.KeyFile)
		if err == nil {
			_, err = ParseKeyPEM(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--service-account-signing-key-file: %w", err))
		}
	}
	return errs
}
