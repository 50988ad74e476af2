package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// DefaultXFCCHeader is capsule-proxy's (and Envoy's) header name.
const DefaultXFCCHeader = "X-Forwarded-Client-Cert"

var errUntrustedXFCC = errors.New("forwarded client certificate from an untrusted peer")

// xfccAuthenticator accepts a client certificate that a trusted
// TLS-terminating proxy forwarded in Envoy's XFCC format.
type xfccAuthenticator struct {
	header  string
	trusted []netip.Prefix
	certs   authenticator.Request // the x509 authenticator against the client CA
}

// present reports whether the request carries the header at all.
func (x *xfccAuthenticator) present(r *http.Request) bool {
	return len(r.Header.Values(x.header)) > 0
}

// trustedPeer reports whether the TCP peer lies in a trusted CIDR. Only
// RemoteAddr counts: X-Forwarded-For is as forgeable as XFCC itself.
func (x *xfccAuthenticator) trustedPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range x.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// AuthenticateRequest implements authenticator.Request.
func (x *xfccAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if !x.present(r) {
		return nil, false, nil
	}
	if !x.trustedPeer(r) {
		return nil, false, errUntrustedXFCC
	}
	chain, err := parseXFCC(strings.Join(r.Header.Values(x.header), ","))
	if err != nil {
		return nil, false, err
	}
	// Reuse k8s.io/apiserver's x509 authenticator (chain verification, CN
	// and O mapping) by presenting the forwarded chain as if it came from
	// the TLS handshake.
	shadow := r.Clone(r.Context())
	shadow.TLS = &tls.ConnectionState{PeerCertificates: chain}
	return x.certs.AuthenticateRequest(shadow)
}

// parseXFCC returns the certificate chain of the last element of an Envoy
// XFCC value: `By=…;Hash=…;Cert="<url-encoded PEM>";Chain="…";Subject="…"`,
// elements separated by commas. The last element is the one the adjacent
// (trusted) proxy appended; earlier ones came from hops nobody vouches for.
// Chain, when present, holds the leaf first and then the intermediates;
// otherwise Cert holds the leaf.
func parseXFCC(v string) ([]*x509.Certificate, error) {
	elems := splitQuoted(v, ',')
	if len(elems) == 0 {
		return nil, errors.New("empty forwarded client certificate header")
	}
	var certPEM, chainPEM string
	for _, kv := range splitQuoted(elems[len(elems)-1], ';') {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = strings.ReplaceAll(val[1:len(val)-1], `\"`, `"`)
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "cert":
			certPEM = val
		case "chain":
			chainPEM = val
		}
	}
	src := chainPEM
	if src == "" {
		src = certPEM
	}
	if src == "" {
		return nil, errors.New("forwarded client certificate header has no Cert")
	}
	decoded, err := url.QueryUnescape(src)
	if err != nil {
		return nil, fmt.Errorf("forwarded client certificate: %w", err)
	}
	var chain []*x509.Certificate
	rest := []byte(decoded)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("forwarded client certificate: %w", err)
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return nil, errors.New("forwarded client certificate: no PEM certificate")
	}
	return chain, nil
}

// splitQuoted splits s at sep outside double quotes (Envoy quotes values
// that contain , ; or =, such as Subject).
func splitQuoted(s string, sep byte) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && inQuote:
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == sep && !inQuote:
			if p := strings.TrimSpace(s[start:i]); p != "" {
				out = append(out, p)
			}
			start = i + 1
		}
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out
}
