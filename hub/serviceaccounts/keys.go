package serviceaccounts

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/go-jose/go-jose/v4"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/bootstrap"
)

// SharedKeyName is the name of the signing key among the hub's shared
// secrets in etcd.
const SharedKeyName = "serviceaccount-signing-key"

// Key is the private key tokens are signed with. The verifier accepts only
// its algorithm and its public half.
type Key struct {
	private crypto.Signer
	alg     jose.SignatureAlgorithm
	kid     string
}

// Algorithm is the one JWS algorithm of the key.
func (k *Key) Algorithm() jose.SignatureAlgorithm { return k.alg }

// ID is the key id put in the token header: the key's JWK thumbprint.
func (k *Key) ID() string { return k.kid }

// Public returns the verification key.
func (k *Key) Public() crypto.PublicKey { return k.private.Public() }

// GenerateKeyPEM returns a fresh ECDSA P-256 private key as PKCS#8 PEM.
func GenerateKeyPEM() ([]byte, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service-account signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseKeyPEM reads an ECDSA P-256 (PKCS#8 or SEC 1) or Ed25519 (PKCS#8)
// private key. Other curves and RSA are refused: one small, fast
// algorithm keeps the verifier's allow-list to a single entry.
func ParseKeyPEM(data []byte) (*Key, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("service-account signing key: no PEM block")
	}
	var parsed any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("service-account signing key: unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("service-account signing key: %w", err)
	}
	k := &Key{}
	switch p := parsed.(type) {
	case *ecdsa.PrivateKey:
		if p.Curve != elliptic.P256() {
			return nil, fmt.Errorf("service-account signing key: curve %s unsupported, use P-256", p.Curve.Params().Name)
		}
		k.private, k.alg = p, jose.ES256
	case ed25519.PrivateKey:
		k.private, k.alg = p, jose.EdDSA
	default:
		return nil, fmt.Errorf("service-account signing key: %T unsupported, use ECDSA P-256 or Ed25519", parsed)
	}
	thumb, err := (&jose.JSONWebKey{Key: k.private.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("service-account signing key thumbprint: %w", err)
	}
	k.kid = base64.RawURLEncoding.EncodeToString(thumb)
	return k, nil
}

// LoadKey reads the signing key from file when one is named, else the
// hub-wide key in etcd, created on first use, so that every replica signs
// and verifies with the same key.
func LoadKey(ctx context.Context, c *clientv3.Client, etcdPrefix, file string) (*Key, error) {
	var data []byte
	var err error
	if file != "" {
		data, err = os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading --service-account-signing-key-file: %w", err)
		}
	} else if data, err = bootstrap.SharedSecret(ctx, c, etcdPrefix, SharedKeyName, GenerateKeyPEM); err != nil {
		return nil, err
	}
	return ParseKeyPEM(data)
}
