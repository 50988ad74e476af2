package bootstrap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// servingCertValidity is how long a generated CA and serving certificate
// are valid, as for the apiserver's own generated ones: a year from an
// hour ago (the hour absorbs clients' clock skew).
const servingCertValidity = 365 * 24 * time.Hour

// WriteSelfSignedServingCert generates a self-signed CA and a serving
// certificate it signs, both ECDSA P-256, and writes them the way
// k8s.io/apiserver's SecureServingOptions.MaybeDefaultWithSelfSignedCerts
// writes its generated RSA pair, so that the apiserver then finds and
// loads them as its own: certFile holds the serving certificate then the
// CA (RootCA finds the CA at the end), keyFile the serving key as an SEC 1
// "EC PRIVATE KEY" block, mode 0600. Missing directories are created 0700.
//
// Why not RSA 2048, as upstream generates: the server's share of a TLS
// handshake is dominated by the signature it makes with this key. Measured
// on one machine (Go, TLS 1.3, default curves, client and server on one
// CPU), a handshake took 1.10 ms with RSA 2048 and 0.41 ms with ECDSA
// P-256. The hub meters handshakes, but every one it accepts is paid in
// CPU, so a cheaper signature makes a handshake flood cost the hub less.
//
// The certificates are named as upstream names them: the CA
// "<host>-ca@<unix time>", the serving certificate "<host>@<unix time>"
// with host (as an IP address if it parses as one, else as a DNS name),
// alternateIPs and alternateDNS as subject alternative names, for server
// authentication only. The one difference in key usage is that
// keyEncipherment, which only an RSA key can do, is left out (RFC 5480
// section 3).
//
// Nothing is overwritten: if either file exists the call fails with an
// error matching fs.ErrExist and leaves both as they were (O_EXCL, so a
// process racing this one cannot have its pair replaced either).
func WriteSelfSignedServingCert(certFile, keyFile, host string, alternateIPs []net.IP, alternateDNS []string) error {
	certPEM, keyPEM, err := selfSignedServingCert(host, alternateIPs, alternateDNS, time.Now(), servingCertValidity)
	if err != nil {
		return err
	}
	for _, dir := range []string{filepath.Dir(certFile), filepath.Dir(keyFile)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating serving certificate directory: %w", err)
		}
	}
	// The key first: a serving certificate without its key would be
	// taken by the apiserver as an operator's broken pair.
	if err := createFile(keyFile, keyPEM, 0o600); err != nil {
		return fmt.Errorf("writing serving key: %w", err)
	}
	if err := createFile(certFile, certPEM, 0o644); err != nil {
		// The key was ours; without its certificate it is of no use.
		_ = os.Remove(keyFile)
		return fmt.Errorf("writing serving certificate: %w", err)
	}
	return nil
}

// SelfSignedServingCert is WriteSelfSignedServingCert in memory, for a
// certificate no file needs to hold: it returns the PEM chain (serving
// certificate, then the CA that signed it) and the serving key's PEM
// ("EC PRIVATE KEY"), both keys ECDSA P-256, named and restricted as
// WriteSelfSignedServingCert's, valid from an hour ago for validity.
// The chain as a whole is what a client trusts as its CA data.
//
// k8s.io/client-go/util/cert generates such pairs with RSA 2048 keys only,
// hence this generator (WriteSelfSignedServingCert says why not RSA).
func SelfSignedServingCert(host string, alternateIPs []net.IP, alternateDNS []string, validity time.Duration) (chainPEM, keyPEM []byte, err error) {
	if validity <= 0 {
		return nil, nil, fmt.Errorf("serving certificate validity %v is not positive", validity)
	}
	return selfSignedServingCert(host, alternateIPs, alternateDNS, time.Now(), validity)
}

// selfSignedServingCert returns the PEM chain (serving certificate, then
// CA) and the serving key's PEM, valid from an hour before now for
// validity.
func selfSignedServingCert(host string, alternateIPs []net.IP, alternateDNS []string, now time.Time, validity time.Duration) (chainPEM, keyPEM []byte, err error) {
	notBefore := now.Add(-time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	caSerial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s-ca@%d", host, now.Unix())},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(host); ip != nil {
		template.IPAddresses = append(template.IPAddresses, ip)
	} else {
		template.DNSNames = append(template.DNSNames, host)
	}
	template.IPAddresses = append(template.IPAddresses, alternateIPs...)
	template.DNSNames = append(template.DNSNames, alternateDNS...)
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating serving certificate: %w", err)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding serving key: %w", err)
	}
	chainPEM = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return chainPEM, keyPEM, nil
}

// randomSerial returns a serial number drawn uniformly from [1, MaxInt64).
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64-1))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// createFile writes data to a new file at path with mode perm, failing
// (fs.ErrExist) rather than replacing a file already there. A file it
// created but could not fill is removed again.
func createFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}
