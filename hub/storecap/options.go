package storecap

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

const (
	// DefaultEmbeddedQuota is the embedded etcd's backend quota unless
	// --etcd-quota-backend-bytes says otherwise: etcd's documented
	// maximum suggested size.
	DefaultEmbeddedQuota int64 = 8 << 30
	// EtcdDefaultQuota is what etcd uses when no quota is configured; the
	// hub assumes it for an external cluster whose quota it cannot read.
	EtcdDefaultQuota int64 = 2 << 30
	// DefaultHighWater is the share of the quota past which non-admin
	// writes are refused: it leaves a fifth of the quota for the hub's
	// own writes, revisions not yet compacted and fragmentation.
	DefaultHighWater = 0.8
	// DefaultPollInterval is how often the monitor reads etcd's status.
	// Status and AlarmList are cheap; a short interval bounds how far a
	// write burst gets past the mark before the next measure.
	DefaultPollInterval = 2 * time.Second
)

// Options are the store's flags.
type Options struct {
	// QuotaBytes is --etcd-quota-backend-bytes; 0 means the default
	// (DefaultEmbeddedQuota for the embedded etcd; for an external one the
	// cluster's own quota, else EtcdDefaultQuota).
	QuotaBytes int64
	// HighWater is --storage-high-water-fraction.
	HighWater float64
	// PollInterval is --storage-poll-interval.
	PollInterval time.Duration
	// DefragExternal is --etcd-defrag-external.
	DefragExternal bool
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{HighWater: DefaultHighWater, PollInterval: DefaultPollInterval}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&o.QuotaBytes, "etcd-quota-backend-bytes", o.QuotaBytes,
		"etcd's backend quota in bytes. The embedded etcd is started with it (0: 8 GiB). For --etcd-servers the hub reads each member's etcd_server_quota_backend_bytes from its /metrics and uses the smaller of that and this flag; 0 and unreadable means etcd's default, 2 GiB.")
	fs.Float64Var(&o.HighWater, "storage-high-water-fraction", o.HighWater,
		"Share of the etcd quota, measured on the bytes in use (dbSizeInUse), above which creates and updates by anyone but hub admins are refused with 403 \"the hub's store is nearly full\"; reads and deletes still work. The hub then compacts etcd and defragments it.")
	fs.DurationVar(&o.PollInterval, "storage-poll-interval", o.PollInterval,
		"How often the hub reads etcd's size and alarms.")
	fs.BoolVar(&o.DefragExternal, "etcd-defrag-external", o.DefragExternal,
		"Let the hub defragment the members of an external etcd (--etcd-servers) when the store is near its quota or held by a NOSPACE alarm. Off by default: a defragmentation blocks the member while it runs, and the cluster may serve others. The embedded etcd is always defragmented.")
}

// Validate reports invalid values.
func (o *Options) Validate() []error {
	var errs []error
	if o.QuotaBytes < 0 {
		errs = append(errs, fmt.Errorf("--etcd-quota-backend-bytes must not be negative"))
	}
	if o.HighWater <= 0 || o.HighWater >= 1 {
		errs = append(errs, fmt.Errorf("--storage-high-water-fraction must be between 0 and 1, got %v", o.HighWater))
	}
	if o.PollInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--storage-poll-interval must be at least 100ms, got %s", o.PollInterval))
	}
	return errs
}

// EmbeddedQuota is the quota to start the embedded etcd with.
func (o *Options) EmbeddedQuota() int64 {
	if o.QuotaBytes > 0 {
		return o.QuotaBytes
	}
	return DefaultEmbeddedQuota
}
