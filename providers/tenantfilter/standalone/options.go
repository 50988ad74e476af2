package standalone

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/component-base/featuregate"

	"github.com/wharfhub/wharf/providers/tenantfilter/auth"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// Options are the standalone command's flags. The capsule-proxy flags keep
// capsule-proxy's names and defaults.
type Options struct {
	Kubeconfig       string
	ClientCA         string
	StatusController bool

	ListeningPort              uint
	EnableSSL                  bool
	SSLCertPath                string
	SSLKeyPath                 string
	AuthPreferredTypes         []string
	CapsuleConfigurationName   string
	RequireCapsuleUser         bool
	IgnoredUserGroups          []string
	IgnoredUsernames           []string
	ImpersonationGroupRegexp   string
	IgnoredImpersonationGroups []string
	EnableReflector            bool
	DisableCaching             bool
	AllowedPaths               []string
	ClientConnectionQPS        float32
	ClientConnectionBurst      int32
	TrustedProxyCIDRs          []string
	XFCCHeaderName             string
	RolebindingsResyncPeriod   time.Duration
	MetricsAddr                string

	// Gates holds --feature-gates (capsule-proxy's three, all alpha, off).
	Gates featuregate.MutableFeatureGate
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	g := featuregate.NewFeatureGate()
	specs := map[featuregate.Feature]featuregate.FeatureSpec{}
	for _, n := range []string{core.GateProxyClusterScoped, core.GateProxyAllNamespaced, core.GateSkipImpersonationReview} {
		specs[featuregate.Feature(n)] = featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Alpha}
	}
	if err := g.Add(specs); err != nil {
		panic(err) // static, distinct names: cannot fail
	}
	types := make([]string, 0, len(auth.DefaultTypes))
	for _, t := range auth.DefaultTypes {
		types = append(types, string(t))
	}
	return &Options{
		StatusController:         true,
		ListeningPort:            9001,
		EnableSSL:                true,
		AuthPreferredTypes:       types,
		CapsuleConfigurationName: "default",
		RequireCapsuleUser:       true,
		AllowedPaths:             []string{"/api", "/apis", "/version"},
		ClientConnectionQPS:      20,
		ClientConnectionBurst:    30,
		XFCCHeaderName:           auth.DefaultXFCCHeader,
		RolebindingsResyncPeriod: 10 * time.Hour,
		MetricsAddr:              ":8080",
		Gates:                    g,
	}
}

// AddFlags registers every flag on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the downstream cluster, with the provider's own credential (default: in-cluster config, else $KUBECONFIG)")
	fs.StringVar(&o.ClientCA, "client-ca", o.ClientCA, "PEM bundle that client certificates (TLSCertificate) and forwarded ones (XForwardedClientCert) must chain to; without it both authenticate nobody")
	fs.BoolVar(&o.StatusController, "status-controller", o.StatusController, "Run the controller that keeps Tenant, CapsuleConfiguration and settings statuses current; set false where Capsule runs")

	fs.UintVar(&o.ListeningPort, "listening-port", o.ListeningPort, "HTTP port the proxy listens to")
	fs.BoolVar(&o.EnableSSL, "enable-ssl", o.EnableSSL, "Serve HTTPS; false serves plain HTTP for a TLS terminator in front")
	fs.StringVar(&o.SSLCertPath, "ssl-cert-path", o.SSLCertPath, "Path to the TLS certificate (default: a self-signed one)")
	fs.StringVar(&o.SSLKeyPath, "ssl-key-path", o.SSLKeyPath, "Path to the TLS certificate key")
	fs.StringSliceVar(&o.AuthPreferredTypes, "auth-preferred-types", o.AuthPreferredTypes, "Authentication types tried in order, first match wins: BearerToken, TLSCertificate, XForwardedClientCert")
	fs.StringVar(&o.CapsuleConfigurationName, "capsule-configuration-name", o.CapsuleConfigurationName, "Name of the CapsuleConfiguration naming the Capsule users")
	fs.BoolVar(&o.RequireCapsuleUser, "require-capsule-user", o.RequireCapsuleUser, "Apply grants only to Capsule users (CapsuleConfiguration users, tenant-owning ServiceAccounts)")
	fs.StringSliceVar(&o.IgnoredUserGroups, "ignored-user-group", o.IgnoredUserGroups, "Groups whose requests pass through unfiltered")
	fs.StringSliceVar(&o.IgnoredUsernames, "ignored-username", o.IgnoredUsernames, "Usernames whose requests pass through unfiltered")
	fs.StringVar(&o.ImpersonationGroupRegexp, "impersonation-group-regexp", o.ImpersonationGroupRegexp, "Regular expression selecting the groups forwarded for impersonation")
	fs.StringSliceVar(&o.IgnoredImpersonationGroups, "ignored-impersonation-group", o.IgnoredImpersonationGroups, "Groups never forwarded for impersonation (after --impersonation-group-regexp)")
	fs.BoolVar(&o.EnableReflector, "enable-reflector", o.EnableReflector, "Reflect RoleBindings: namespace visibility and labelled cluster-wide lists")
	fs.BoolVar(&o.DisableCaching, "disable-caching", o.DisableCaching, "Read the downstream directly instead of informer caches (disables the reflector)")
	fs.StringSliceVar(&o.AllowedPaths, "allowed-paths", o.AllowedPaths, "URL paths forwarded without inspection (still authenticated)")
	fs.Float32Var(&o.ClientConnectionQPS, "client-connection-qps", o.ClientConnectionQPS, "QPS towards the downstream kube-apiserver")
	fs.Int32Var(&o.ClientConnectionBurst, "client-connection-burst", o.ClientConnectionBurst, "Burst towards the downstream kube-apiserver")
	fs.StringSliceVar(&o.TrustedProxyCIDRs, "trusted-proxy-cidrs", o.TrustedProxyCIDRs, "CIDRs of proxies allowed to send forwarded client certificates; none refuses XFCC outright")
	fs.StringVar(&o.XFCCHeaderName, "xfcc-header-name", o.XFCCHeaderName, "Header carrying forwarded client certificates (Envoy format)")
	fs.DurationVar(&o.RolebindingsResyncPeriod, "rolebindings-resync-period", o.RolebindingsResyncPeriod, "Resync period of the RoleBinding reflector")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Address of the metrics endpoint (/metrics, /healthz, /readyz)")
	o.Gates.AddFlag(fs)
}

// Complete fills what depends on the environment.
func (o *Options) Complete() error {
	if o.Kubeconfig == "" {
		o.Kubeconfig = os.Getenv("KUBECONFIG")
	}
	for i, p := range o.AllowedPaths {
		o.AllowedPaths[i] = strings.TrimSpace(p)
	}
	return nil
}

// Validate reports every invalid flag at once.
func (o *Options) Validate() error {
	var errs []error
	if o.ListeningPort == 0 || o.ListeningPort > 65535 {
		errs = append(errs, fmt.Errorf("--listening-port %d: want 1-65535", o.ListeningPort))
	}
	// capsule-proxy's own rule: certificates make no sense without TLS.
	if !o.EnableSSL && (o.SSLCertPath != "" || o.SSLKeyPath != "") {
		errs = append(errs, errors.New("--ssl-cert-path/--ssl-key-path cannot be used with --enable-ssl=false"))
	}
	if (o.SSLCertPath == "") != (o.SSLKeyPath == "") {
		errs = append(errs, errors.New("--ssl-cert-path and --ssl-key-path go together"))
	}
	types, err := auth.ParseTypes(o.AuthPreferredTypes)
	if err != nil {
		errs = append(errs, fmt.Errorf("--auth-preferred-types: %w", err))
	} else if len(types) == 0 {
		errs = append(errs, errors.New("--auth-preferred-types: at least one type"))
	}
	if _, err := auth.ParseCIDRs(o.TrustedProxyCIDRs); err != nil {
		errs = append(errs, fmt.Errorf("--trusted-proxy-cidrs: %w", err))
	}
	if o.ImpersonationGroupRegexp != "" {
		if _, err := regexp.Compile(o.ImpersonationGroupRegexp); err != nil {
			errs = append(errs, fmt.Errorf("--impersonation-group-regexp: %w", err))
		}
	}
	for _, p := range o.AllowedPaths {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("--allowed-paths %q: must start with /", p))
		}
	}
	if o.XFCCHeaderName == "" {
		errs = append(errs, errors.New("--xfcc-header-name: empty"))
	}
	if o.ClientConnectionQPS <= 0 || o.ClientConnectionBurst <= 0 {
		errs = append(errs, errors.New("--client-connection-qps and --client-connection-burst must be positive"))
	}
	if o.CapsuleConfigurationName == "" {
		errs = append(errs, errors.New("--capsule-configuration-name: empty"))
	}
	return utilerrors.NewAggregate(errs)
}

// CoreOptions maps the filtering flags onto core.Options one to one.
func (o *Options) CoreOptions() core.Options {
	gates := map[string]bool{}
	for _, n := range []string{core.GateProxyClusterScoped, core.GateProxyAllNamespaced, core.GateSkipImpersonationReview} {
		gates[n] = o.Gates.Enabled(featuregate.Feature(n))
	}
	return core.Options{
		CapsuleConfigurationName:   o.CapsuleConfigurationName,
		RequireCapsuleUser:         o.RequireCapsuleUser,
		IgnoredUserGroups:          o.IgnoredUserGroups,
		IgnoredUsernames:           o.IgnoredUsernames,
		ImpersonationGroupRegexp:   o.ImpersonationGroupRegexp,
		IgnoredImpersonationGroups: o.IgnoredImpersonationGroups,
		EnableReflector:            o.EnableReflector,
		DisableCaching:             o.DisableCaching,
		FeatureGates:               gates,
		AllowedPaths:               o.AllowedPaths,
		ClientQPS:                  o.ClientConnectionQPS,
		ClientBurst:                int(o.ClientConnectionBurst),
		RoleBindingsResyncPeriod:   o.RolebindingsResyncPeriod,
	}
}
