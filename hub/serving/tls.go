package serving

import (
	"context"
	"crypto/tls"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
)

// tlsConfig builds the listener's TLS configuration from info as
// k8s.io/apiserver's SecureServingInfo.Serve does: TLS 1.2 at least, ALPN
// h2 then http/1.1, the client certificate requested (never required: the
// authenticators decide) when a client CA is set, and the serving, SNI and
// client CA material kept current by dynamiccertificates until stopCh
// closes. A client cannot tell the two configurations apart.
func tlsConfig(info *genericapiserver.SecureServingInfo, stopCh <-chan struct{}) *tls.Config {
	cfg := &tls.Config{
		// TLS 1.0 and 1.1 are broken (POODLE, BEAST, RC4); upstream's floor.
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
	}
	if info.DisableHTTP2 {
		klog.InfoS("Serving HTTP/1.1 only: HTTP/2 is disabled")
		cfg.NextProtos = []string{"http/1.1"}
	}
	if info.MinTLSVersion > 0 {
		cfg.MinVersion = info.MinTLSVersion
	}
	if len(info.CipherSuites) > 0 {
		cfg.CipherSuites = info.CipherSuites
		warnInsecureCiphers(info.CipherSuites)
	}
	if len(info.CurvePreferences) > 0 {
		cfg.CurvePreferences = info.CurvePreferences
	}
	if info.ClientCA != nil {
		// Asked for so that x509 authentication sees it in r.TLS; not
		// required, so tokens and anonymous requests still connect.
		cfg.ClientAuth = tls.RequestClientCert
	}
	if info.ClientCA == nil && info.Cert == nil && len(info.SNICerts) == 0 {
		return cfg
	}
	ctrl := dynamiccertificates.NewDynamicServingCertificateController(cfg, info.ClientCA, info.Cert, info.SNICerts, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	// Each provider tells the controller when its files change; a provider
	// that watches files runs until stopCh. A first load that fails is only
	// logged: the controller then serves nothing, which fails closed.
	if info.ClientCA != nil {
		info.ClientCA.AddListener(ctrl)
		startProvider(ctx, info.ClientCA, "client CA")
	}
	if info.Cert != nil {
		info.Cert.AddListener(ctrl)
		startProvider(ctx, info.Cert, "serving certificate")
	}
	for _, sni := range info.SNICerts {
		sni.AddListener(ctrl)
		startProvider(ctx, sni, "SNI serving certificate")
	}
	if err := ctrl.RunOnce(); err != nil {
		klog.ErrorS(err, "Loading the serving certificates; the controller retries")
	}
	go ctrl.Run(1, stopCh)
	cfg.GetConfigForClient = ctrl.GetConfigForClient
	return cfg
}

// startProvider loads p once and keeps it current until ctx is done, if it
// is a controller (a file watcher); static content is left as is.
func startProvider(ctx context.Context, p any, what string) {
	runner, ok := p.(dynamiccertificates.ControllerRunner)
	if !ok {
		return
	}
	if err := runner.RunOnce(ctx); err != nil {
		klog.ErrorS(err, "Loading TLS material; its controller retries", "what", what)
	}
	go runner.Run(ctx, 1)
}

// warnInsecureCiphers logs, as upstream does, each configured suite that
// component-base calls insecure.
func warnInsecureCiphers(suites []uint16) {
	insecure := flag.InsecureTLSCiphers()
	for _, id := range suites {
		for name, bad := range insecure {
			if id == bad {
				klog.InfoS("Warning: an insecure TLS cipher suite is configured", "cipher", name)
			}
		}
	}
}
