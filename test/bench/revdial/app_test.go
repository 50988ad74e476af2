package revdialbench

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"testing"
	"time"
)

// The agent-side application. The first byte selects a mode:
//
//	'e' echo everything back
//	's' sink: read an 8-byte big-endian length, consume that many bytes,
//	    answer one byte 'k'
func serveApp(c net.Conn) {
	defer c.Close()
	var mode [1]byte
	if _, err := io.ReadFull(c, mode[:]); err != nil {
		return
	}
	switch mode[0] {
	case 'e':
		_, _ = io.Copy(c, c)
	case 's':
		var n [8]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, bufio.NewReaderSize(c, 64<<10), int64(binary.BigEndian.Uint64(n[:]))); err != nil {
			return
		}
		_, _ = c.Write([]byte{'k'})
	}
}

// acceptLoop serves the application on every connection from ln.
func acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serveApp(c)
	}
}

// tlsPair returns a server config with a fresh ECDSA loopback certificate
// and a client config that trusts it and resumes sessions.
func tlsPair(tb testing.TB) (*tls.Config, *tls.Config) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "revdial-bench"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ClientSessionCache: tls.NewLRUClientSessionCache(256)}
}

// pemPair serialises a TLS pair for the agent subprocess: it needs the
// client side only, and trusts the hub's certificate.
func certDER(cfg *tls.Config) []byte { return cfg.Certificates[0].Certificate[0] }

func clientConfigFor(der []byte) (*tls.Config, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{RootCAs: pool, ClientSessionCache: tls.NewLRUClientSessionCache(256)}, nil
}
