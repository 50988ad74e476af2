package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/bootstrap"
)

// writeECDSAServingCert generates the serving certificate that s's
// MaybeDefaultWithSelfSignedCerts would generate (same files, names and
// subject alternative names) but with ECDSA P-256 keys instead of RSA 2048,
// so that the call then finds the pair and only sets the file names. The
// server's signature dominates the CPU a TLS handshake costs, and an ECDSA
// one is much cheaper (bootstrap.WriteSelfSignedServingCert has the
// numbers), so a handshake flood costs the hub less.
//
// It does nothing whenever upstream would not write files itself (a
// --tls-cert-file or --tls-private-key-file given, no cert directory,
// fixtures, no listener) and whenever either file already exists: a data
// dir keeps the certificate its clients trust, RSA or not, and a lone
// certificate or key is left for upstream to refuse as a broken pair.
func writeECDSAServingCert(s *genericoptions.SecureServingOptions, publicAddress string, alternateDNS []string, alternateIPs []net.IP) error {
	if s == nil || (s.BindPort == 0 && s.Listener == nil) {
		return nil
	}
	sc := s.ServerCert
	if sc.CertKey.CertFile != "" || sc.CertKey.KeyFile != "" || sc.CertDirectory == "" || sc.PairName == "" || sc.FixtureDirectory != "" {
		return nil
	}
	certFile := filepath.Join(sc.CertDirectory, sc.PairName+".crt")
	keyFile := filepath.Join(sc.CertDirectory, sc.PairName+".key")
	for _, f := range []string{certFile, keyFile} {
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	// Upstream adds the listener's address (localhost when it listens
	// on all of them) to the names it generates for; so do we.
	dns := append([]string(nil), alternateDNS...)
	ips := append([]net.IP(nil), alternateIPs...)
	if s.BindAddress.IsUnspecified() {
		dns = append(dns, "localhost")
	} else if s.BindAddress != nil {
		ips = append(ips, s.BindAddress)
	}
	if err := bootstrap.WriteSelfSignedServingCert(certFile, keyFile, publicAddress, ips, dns); err != nil {
		return fmt.Errorf("creating serving certificates: %w", err)
	}
	klog.InfoS("Generated a self-signed ECDSA P-256 serving certificate", "cert", certFile, "key", keyFile)
	return nil
}

// loopbackCertValidity is how long the in-memory loopback certificate is
// valid: the roughly three years upstream gives its own, which a restart
// renews.
const loopbackCertValidity = (3*365 + 1) * 24 * time.Hour

// applySecureServing fills in info and the loopback client config from s,
// as s.ApplyTo (SecureServingOptionsWithLoopback) would, except that the
// loopback certificate is ECDSA P-256 instead of RSA 2048.
//
// The loopback certificate is served to any client on the public listener
// that asks for the server name apiserver-loopback-client, not only to the
// hub's own loopback client; an RSA one there would let anyone make each
// handshake they flood the hub with cost it about three times the CPU of
// an ECDSA one (bootstrap.WriteSelfSignedServingCert has the numbers).
// Upstream has no option for the key type, so the listener is applied with
// the plain SecureServingOptions.ApplyTo and the loopback wiring done here
// through upstream's public API: an in-memory ECDSA pair for that name,
// put first among the SNI certificates (so it wins over any operator's
// certificate for the same name, as upstream's does), and a loopback
// client config from SecureServingInfo.NewLoopbackClientConfig that trusts
// exactly that pair's chain and sends that name, with a fresh random
// bearer token. No RSA key is generated at all.
//
// When s configures no listener, info stays nil and so does the loopback
// client config, as with upstream.
func applySecureServing(s *genericoptions.SecureServingOptionsWithLoopback, info **genericapiserver.SecureServingInfo, loopback **rest.Config) error {
	if s == nil || s.SecureServingOptions == nil {
		return nil
	}
	if err := s.SecureServingOptions.ApplyTo(info); err != nil {
		return err
	}
	if *info == nil {
		return nil
	}
	name := genericapiserver.LoopbackClientServerNameOverride
	certPEM, keyPEM, err := bootstrap.SelfSignedServingCert(name, nil, nil, loopbackCertValidity)
	if err != nil {
		return fmt.Errorf("generating the loopback certificate: %w", err)
	}
	cert, err := dynamiccertificates.NewStaticSNICertKeyContent("self-signed loopback (ECDSA P-256)", certPEM, keyPEM, name)
	if err != nil {
		return fmt.Errorf("loading the loopback certificate: %w", err)
	}
	(*info).SNICerts = append([]dynamiccertificates.SNICertKeyContentProvider{cert}, (*info).SNICerts...)
	c, err := (*info).NewLoopbackClientConfig(rand.Text(), certPEM)
	if err != nil {
		return fmt.Errorf("configuring the loopback client: %w", err)
	}
	*loopback = c
	return nil
}
