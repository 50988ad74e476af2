package login

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
)

// HTTPClient returns a client that trusts the system roots plus the PEM
// certificates in caFile, if given.
func HTTPClient(caFile string) (*http.Client, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, nil
}

// httpsURL parses u and insists on https: tokens travel over it.
func httpsURL(what, u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", what, u, err)
	}
	if p.Scheme != "https" || p.Host == "" {
		return nil, fmt.Errorf("%s %q must be an https URL", what, u)
	}
	return p, nil
}
