package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	genericoptions "k8s.io/apiserver/pkg/server/options"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/wharfhub/wharf/hub/plugins"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/fairness"
	"github.com/wharfhub/wharf/hub/h2guard"
	"github.com/wharfhub/wharf/hub/idleconns"
	"github.com/wharfhub/wharf/hub/login"
	"github.com/wharfhub/wharf/hub/proxied"
	"github.com/wharfhub/wharf/hub/quota"
	"github.com/wharfhub/wharf/hub/rapidreset"
	"github.com/wharfhub/wharf/hub/registry"
	"github.com/wharfhub/wharf/hub/selectors"
	"github.com/wharfhub/wharf/hub/serviceaccounts"
	wstorage "github.com/wharfhub/wharf/hub/storage"
	"github.com/wharfhub/wharf/hub/storecap"
)

// Options are the hub's command-line options, grouped by subsystem.
type Options struct {
	// DataDir holds embedded etcd, generated certificates and credentials.
	DataDir string
	// ExternalURL is how clients reach the hub; it is written into
	// Workspace status.URL and the admin kubeconfig.
	ExternalURL string

	SecureServing *genericoptions.SecureServingOptionsWithLoopback
	Etcd          *genericoptions.EtcdOptions
	// Resets bounds each connection's HTTP/2 streams cancelled before
	// their answer (hub/rapidreset).
	Resets *rapidreset.Options
	// IdleConns closes connections that begin no request (hub/idleconns).
	IdleConns *idleconns.Options
	// Proxied reads client addresses from trusted TCP proxies' PROXY
	// protocol headers (hub/proxied).
	Proxied *proxied.Options
	// H2Guard bounds each HTTP/2 connection's header blocks and control
	// frames below the HTTP/2 server (hub/h2guard).
	H2Guard *h2guard.Options

	// TokenAuthFile is a static token CSV (token,user,uid,"group1,group2").
	TokenAuthFile string
	// Authn holds the --oidc-* flags.
	Authn *authn.Options
	// ServiceAccounts holds the --service-account-* flags.
	ServiceAccounts *serviceaccounts.Options
	// Login holds browser login, token login and login rate limits.
	Login *login.Options
	// AuthnThrottle limits failed authentication per client address.
	AuthnThrottle *authn.ThrottleOptions

	// Fairness holds the in-flight budgets and each tenant's share.
	Fairness *fairness.Options
	// Quota holds the per-workspace and per-tenant storage ceilings.
	Quota *quota.Options
	// Store holds etcd's quota and the high-water mark (hub/storecap).
	Store *storecap.Options
	// Selectors bounds a request's label and field selectors (hub/selectors).
	Selectors *selectors.Limit

	// Plugins are the provider binaries the hub runs and supervises.
	Plugins *plugins.Options
	// Replica names this hub among the replicas sharing etcd.
	Replica *ReplicaOptions
	// Shutdown says how the hub drains on SIGTERM.
	Shutdown *ShutdownOptions

	// AdminUsers and AdminGroups may do everything, in every workspace.
	AdminUsers  []string
	AdminGroups []string

	// MaxWorkspaceRBACRules and MaxWorkspaceAggregatedClusterRoles bound
	// the RBAC objects of each workspace (0: unbounded); hub admins are
	// exempt.
	MaxWorkspaceRBACRules              int
	MaxWorkspaceAggregatedClusterRoles int

	// WatchCacheHistoryBytes bounds the deleted and replaced objects each
	// watch cache keeps in its event history (hub/storage history.go).
	WatchCacheHistoryBytes int64
	// historyShares is each tenant's share of that bound (history.go).
	historyShares *wstorage.HistoryShares
	// cacheProgress is how far each watch cache has read (history.go).
	cacheProgress *wstorage.CacheProgress

	// EventTTL is how long events are kept (--event-ttl, as kube-apiserver).
	EventTTL time.Duration
	// WorkspaceDeletionGracePeriod bounds how long a deleted workspace's
	// content (its finalizers) may hold the deletion before the rest is
	// purged.
	WorkspaceDeletionGracePeriod time.Duration
}

// DefaultWorkspaceDeletionGracePeriod is long enough for a provider to
// clean up after an edge agent or a proxy target, short enough that a
// stuck finalizer does not hold a workspace's name for long.
const DefaultWorkspaceDeletionGracePeriod = 5 * time.Minute

// NewOptions returns options with the defaults documented in the flags.
func NewOptions() *Options {
	o := &Options{
		DataDir:                            ".wharf",
		SecureServing:                      genericoptions.NewSecureServingOptions().WithLoopback(),
		Resets:                             rapidreset.NewOptions(),
		IdleConns:                          idleconns.NewOptions(),
		Proxied:                            proxied.NewOptions(),
		H2Guard:                            h2guard.NewOptions(),
		Etcd:                               genericoptions.NewEtcdOptions(newStorageConfig()),
		AdminGroups:                        []string{"system:masters"},
		MaxWorkspaceRBACRules:              rbac.DefaultMaxRules,
		MaxWorkspaceAggregatedClusterRoles: rbac.DefaultMaxAggregated,
		WorkspaceDeletionGracePeriod:       DefaultWorkspaceDeletionGracePeriod,
		Plugins:                            plugins.NewOptions(),
		Replica:                            &ReplicaOptions{},
		Shutdown:                           ptrTo(DefaultShutdown()),
		Authn:                              authn.NewOptions(),
		Login:                              login.NewOptions(),
		AuthnThrottle:                      authn.NewThrottleOptions(),
		Fairness:                           fairness.NewOptions(),
		Quota:                              quota.NewOptions(),
		Store:                              storecap.NewOptions(),
		Selectors:                          selectors.NewLimit(),
		EventTTL:                           registry.DefaultEventTTL,
		WatchCacheHistoryBytes:             wstorage.DefaultHistoryBytes,
	}
	o.ServiceAccounts = serviceaccounts.NewOptions()
	o.SecureServing.BindPort = 9443
	o.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	o.SecureServing.ServerCert.PairName = "serving"
	// The cheap key exchanges only: a ClientHello offering only P-384 or
	// P-521 made the hub compute 392 or 1,273 µs for the key exchange
	// against X25519's 64 and P-256's 44 (measured on one core), and a
	// flood of replayed ClientHellos costs its sender nothing (tenth
	// outside review). Every client we know offers one of these: Go's
	// (kubectl, client-go) the hybrid X25519MLKEM768 and X25519, browsers
	// X25519, FIPS builds P-256. --tls-curve-preferences overrides.
	o.SecureServing.CurvePreferences = []int32{int32(tls.X25519MLKEM768), int32(tls.X25519), int32(tls.CurveP256)}
	// Empty means <data-dir>/pki, filled in by Complete.
	o.SecureServing.ServerCert.CertDirectory = ""
	return o
}

// Flags returns the flags grouped by subsystem, for usage output.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	g := fss.FlagSet("hub")
	g.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for embedded etcd, generated certificates, the admin token and admin.kubeconfig.")
	g.DurationVar(&o.WorkspaceDeletionGracePeriod, "workspace-deletion-grace-period", o.WorkspaceDeletionGracePeriod,
		"How long after a Workspace's deletion its content is deleted through the API, honouring finalizers, before what remains is purged (and reported in its ContentDeleted condition, the log and wharf_workspace_deletion_forced_objects_total).")
	g.StringVar(&o.ExternalURL, "external-url", o.ExternalURL, "URL clients use to reach the hub (default https://<bind-address>:<secure-port>).")
	g.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "Amount of time to retain events.")
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Resets.AddFlags(fss.FlagSet("secure serving"))
	o.IdleConns.AddFlags(fss.FlagSet("secure serving"))
	o.Proxied.AddFlags(fss.FlagSet("secure serving"))
	o.H2Guard.AddFlags(fss.FlagSet("secure serving"))
	o.Etcd.AddFlags(fss.FlagSet("etcd"))
	o.Store.AddFlags(fss.FlagSet("etcd"))
	fss.FlagSet("etcd").Int64Var(&o.WatchCacheHistoryBytes, "watch-cache-history-bytes", o.WatchCacheHistoryBytes,
		"Bytes of deleted and replaced objects a resource's watch cache may keep in its event history; 10 s over it, the cache relists to release them (closing that resource's watches, at most once a minute). 0: no bound, as kube-apiserver.")
	fss.FlagSet("etcd").Lookup("etcd-servers").Usage = "Endpoints of an external etcd cluster. Empty (the default) runs an embedded etcd under --data-dir."
	a := fss.FlagSet("authentication")
	a.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "CSV file of static bearer tokens: token,user,uid,\"group1,group2\".")
	o.Authn.AddFlags(a)
	o.ServiceAccounts.AddFlags(a)
	o.Login.AddFlags(a)
	o.AuthnThrottle.AddFlags(a)
	o.Fairness.AddFlags(fss.FlagSet("in-flight limits"))
	o.Quota.AddFlags(fss.FlagSet("storage quotas"))
	o.Selectors.AddFlags(fss.FlagSet("selectors"))
	o.Plugins.AddFlags(fss.FlagSet("providers"))
	o.Replica.AddFlags(fss.FlagSet("replicas"))
	o.Shutdown.AddFlags(fss.FlagSet("shutdown"))
	z := fss.FlagSet("authorization")
	z.StringSliceVar(&o.AdminUsers, "admin-user", o.AdminUsers, "Users who may do everything in every workspace, /clusters/* included. Repeatable.")
	z.StringSliceVar(&o.AdminGroups, "admin-group", o.AdminGroups, "Groups whose members may do everything in every workspace. Repeatable.")
	z.IntVar(&o.MaxWorkspaceRBACRules, "max-workspace-rbac-rules", o.MaxWorkspaceRBACRules,
		"Most rules the Roles and ClusterRoles of one workspace may hold together; a write beyond it gets 403 \"exceeded quota\". 0 means no bound. Hub admins are exempt.")
	z.IntVar(&o.MaxWorkspaceAggregatedClusterRoles, "max-workspace-aggregated-clusterroles", o.MaxWorkspaceAggregatedClusterRoles,
		"Most ClusterRoles with an aggregationRule one workspace may hold. 0 means no bound. Hub admins are exempt.")
	return fss
}

// Complete fills in defaults that depend on other options.
func (o *Options) Complete() error {
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	o.DataDir = abs
	if o.SecureServing.ServerCert.CertDirectory == "" {
		o.SecureServing.ServerCert.CertDirectory = filepath.Join(o.DataDir, "pki")
	}
	if o.ExternalURL == "" {
		host := o.SecureServing.BindAddress.String()
		if o.SecureServing.BindAddress.IsUnspecified() {
			host = "127.0.0.1"
		}
		o.ExternalURL = (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, fmt.Sprint(o.SecureServing.BindPort))}).String()
	}
	o.completeReplica()
	return nil
}

// Validate reports every invalid option at once.
func (o *Options) Validate() []error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Resets.Validate()...)
	errs = append(errs, o.IdleConns.Validate()...)
	errs = append(errs, o.Proxied.Validate()...)
	errs = append(errs, o.H2Guard.Validate()...)
	errs = append(errs, o.Plugins.Validate()...)
	errs = append(errs, o.Replica.Validate()...)
	errs = append(errs, o.Shutdown.Validate()...)
	errs = append(errs, o.Selectors.Validate()...)
	if len(o.Etcd.StorageConfig.Transport.ServerList) > 0 {
		errs = append(errs, o.Etcd.Validate()...)
	}
	if o.MaxWorkspaceRBACRules < 0 || o.MaxWorkspaceAggregatedClusterRoles < 0 {
		errs = append(errs, fmt.Errorf("--max-workspace-rbac-rules and --max-workspace-aggregated-clusterroles must not be negative"))
	}
	if o.EventTTL < time.Second {
		errs = append(errs, fmt.Errorf("--event-ttl must be at least 1s, got %s", o.EventTTL))
	}
	if o.WatchCacheHistoryBytes < 0 {
		errs = append(errs, fmt.Errorf("--watch-cache-history-bytes must not be negative"))
	}
	if o.WorkspaceDeletionGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--workspace-deletion-grace-period must not be negative"))
	}
	if o.SecureServing.BindPort == 0 {
		errs = append(errs, fmt.Errorf("--secure-port must be set: the hub serves TLS only"))
	}
	if u, err := url.Parse(o.ExternalURL); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--external-url %q must be an absolute https URL", o.ExternalURL))
	}
	if o.TokenAuthFile != "" {
		if _, err := os.Stat(o.TokenAuthFile); err != nil {
			errs = append(errs, fmt.Errorf("--token-auth-file: %w", err))
		}
	}
	errs = append(errs, o.Authn.Validate()...)
	errs = append(errs, o.ServiceAccounts.Validate()...)
	errs = append(errs, o.Login.Validate(o.Authn.OIDC.Enabled())...)
	errs = append(errs, o.AuthnThrottle.Validate()...)
	errs = append(errs, o.Fairness.Validate()...)
	errs = append(errs, o.Quota.Validate()...)
	errs = append(errs, o.Store.Validate()...)
	return errs
}

func ptrTo[T any](v T) *T { return &v }

// watchCacheHistory is the bound on each watch cache's event history.
func (o *Options) watchCacheHistory() wstorage.HistoryLimit {
	return wstorage.HistoryLimit{Bytes: o.WatchCacheHistoryBytes, Grace: wstorage.DefaultHistoryGrace, MinInterval: wstorage.DefaultHistoryMinInterval, Shares: o.historyShareTable(), Progress: o.cacheProgressTable()}
}
