package proxied

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
)

// DefaultHeaderTimeout is how long a listed peer has to send its header:
// a proxy sends it as it connects, before any byte of its client's.
const DefaultHeaderTimeout = 5 * time.Second

// Options configure the PROXY protocol on the hub's listener.
type Options struct {
	// CIDRs are the peers whose connections begin with a PROXY header.
	CIDRs []string
	// HeaderTimeout bounds how long one of them may take to send it.
	HeaderTimeout time.Duration
}

// NewOptions returns the defaults: no peer is read for a header.
func NewOptions() *Options { return &Options{HeaderTimeout: DefaultHeaderTimeout} }

// AddFlags registers the options' flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.CIDRs, "proxy-protocol-cidrs", o.CIDRs,
		"TCP proxies (CIDRs) whose connections to the hub must begin with a PROXY protocol header (v1 or v2, e.g. haproxy's send-proxy-v2); "+
			"the client address it names is the connection's address for every per-address bound. "+
			"A connection from these addresses without one is closed; from other addresses a header is not read. Empty: none.")
	fs.DurationVar(&o.HeaderTimeout, "proxy-protocol-header-timeout", o.HeaderTimeout,
		"How long a connection from --proxy-protocol-cidrs may take to send its PROXY header before it is closed.")
}

// Validate reports invalid options.
func (o *Options) Validate() []error {
	var errs []error
	if _, err := o.Nets(); err != nil {
		errs = append(errs, err)
	}
	if o.HeaderTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--proxy-protocol-header-timeout must be positive"))
	}
	return errs
}

// Nets parses CIDRs.
func (o *Options) Nets() ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, c := range o.CIDRs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("--proxy-protocol-cidrs %q: %w", c, err)
		}
		nets = append(nets, n)
	}
	return nets, nil
}
