package standalone

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/auth"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// Filter is the filtering core as the listener uses it: core.Core.
type Filter interface {
	http.Handler
	// Ready reports whether the caches have synced (/readyz).
	Ready() bool
}

// FilterFunc builds the Filter for the downstream; cfg is the provider's
// credential. Tests may replace it; nil means core.New.
type FilterFunc func(ctx context.Context, cfg *rest.Config, opts core.Options) (Filter, error)

// Config is the validated, loaded configuration New takes.
type Config struct {
	// Rest is the downstream and the provider's own credential.
	Rest *rest.Config
	Core core.Options
	// Auth lacks its review clients; New adds them from Rest.
	Auth auth.Config
	// ListenAddr is ":<listening-port>"; TLS nil means plain HTTP.
	ListenAddr  string
	TLS         *tls.Config
	MetricsAddr string
	// StatusController runs the status controller next to the listener.
	StatusController bool
	// NewFilter builds the core; nil means core.New.
	NewFilter FilterFunc
}

// Config loads files (kubeconfig, certificates, client CA) and returns the
// runtime configuration. Call Complete and Validate first.
func (o *Options) Config() (*Config, error) {
	rc, err := loadRestConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = o.ClientConnectionQPS, int(o.ClientConnectionBurst)
	types, err := auth.ParseTypes(o.AuthPreferredTypes)
	if err != nil {
		return nil, err
	}
	cidrs, err := auth.ParseCIDRs(o.TrustedProxyCIDRs)
	if err != nil {
		return nil, err
	}
	c := &Config{
		Rest: rc, Core: o.CoreOptions(),
		Auth: auth.Config{Types: types, TrustedProxyCIDRs: cidrs, XFCCHeader: o.XFCCHeaderName,
			SkipImpersonationReview: o.Gates.Enabled(core.GateSkipImpersonationReview)},
		ListenAddr:       fmt.Sprintf(":%d", o.ListeningPort),
		MetricsAddr:      o.MetricsAddr,
		StatusController: o.StatusController,
	}
	if o.ClientCA != "" {
		pem, err := os.ReadFile(o.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca %s: no PEM certificate", o.ClientCA)
		}
		c.Auth.ClientCA = pool
	} else {
		klog.InfoS("no --client-ca: TLSCertificate and XForwardedClientCert authenticate nobody")
	}
	if o.EnableSSL {
		if c.TLS, err = o.servingTLS(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func loadRestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if rc, err := rest.InClusterConfig(); err == nil {
			return rc, nil
		}
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	if kubeconfig == "" {
		rules = clientcmd.NewDefaultClientConfigLoadingRules()
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return rc, nil
}

// servingTLS loads --ssl-cert-path/--ssl-key-path or, like capsule-proxy
// without them, makes a self-signed certificate. Client certificates are
// requested, not required and not verified here: the TLSCertificate
// authenticator verifies them against --client-ca, so a request with a
// foreign certificate can still authenticate with a token.
func (o *Options) servingTLS() (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if o.SSLCertPath != "" {
		cert, err = tls.LoadX509KeyPair(o.SSLCertPath, o.SSLKeyPath)
		if err != nil {
			return nil, fmt.Errorf("--ssl-cert-path/--ssl-key-path: %w", err)
		}
	} else {
		host, _ := os.Hostname()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host,
			[]net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, []string{"localhost"})
		if err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
		klog.InfoS("no --ssl-cert-path: serving HTTPS with a self-signed certificate", "host", host)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}, nil
}
