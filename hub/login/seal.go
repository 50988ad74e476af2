package login

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// KeySize is the length of the hub-wide secrets the login keys derive
// from (see bootstrap.SharedSecret).
const KeySize = 32

// errInvalid is every failure to open, verify or decode a sealed or signed
// value. One error for all causes: callers must not tell a client (or a
// log reader) which check failed.
var errInvalid = errors.New("invalid or expired credential")

// derive returns a key for one purpose from a hub-wide secret, so that a
// value sealed for one use (a session) can never be opened as another
// (a pre-login cookie or a stored refresh token).
func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("wharf login key: " + purpose))
	return m.Sum(nil)
}

// sealer encrypts and authenticates with AES-256-GCM. The output is
// base64url(nonce || ciphertext), safe in a cookie value.
type sealer struct{ aead cipher.AEAD }

func newSealer(secret []byte, purpose string) (sealer, error) {
	if len(secret) < KeySize {
		return sealer{}, fmt.Errorf("login key for %s: need %d bytes, have %d", purpose, KeySize, len(secret))
	}
	block, err := aes.NewCipher(derive(secret, purpose))
	if err != nil {
		return sealer{}, fmt.Errorf("login key for %s: %w", purpose, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, fmt.Errorf("login key for %s: %w", purpose, err)
	}
	return sealer{aead: aead}, nil
}

// seal encrypts plaintext bound to ad (additional data: what the value
// is for, such as the cookie name), so a value cannot be moved elsewhere.
func (s sealer) seal(plaintext, ad []byte) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sealing: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plaintext, ad)), nil
}

func (s sealer) open(value string, ad []byte) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, errInvalid
	}
	n := s.aead.NonceSize()
	out, err := s.aead.Open(nil, raw[:n], raw[n:], ad)
	if err != nil {
		return nil, errInvalid
	}
	return out, nil
}

// randomID returns n random bytes, base64url encoded.
func randomID(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// GenerateKey makes a new hub-wide secret; it is the generate function
// for bootstrap.SharedSecret.
func GenerateKey() ([]byte, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generating login key: %w", err)
	}
	return b, nil
}
