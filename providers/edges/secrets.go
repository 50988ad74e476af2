package edges

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Annotations on an Edge that hold the provider's secrets, as SHA-256
// hashes only: whoever can read the Edge learns nothing usable from them.
const (
	AnnJoinTokenHash    = "edges.wharf.dev/join-token-sha256"
	AnnJoinTokenExpires = "edges.wharf.dev/join-token-expires" // RFC 3339
	AnnCredentialHash   = "edges.wharf.dev/credential-sha256"
	AnnCredentialIssued = "edges.wharf.dev/credential-issued-at" // RFC 3339
	// AnnPreviousCredentialHash is the credential a rotation replaced; it
	// is accepted until the new one is first used, so an agent that missed
	// the rotated credential (a dropped 101) is not locked out.
	AnnPreviousCredentialHash = "edges.wharf.dev/previous-credential-sha256"
)

// secretBytes is the size of join tokens and agent credentials: 256 bits.
const secretBytes = 32

// newSecret returns 256 bits from crypto/rand, URL-safe base64.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("edges: random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashSecret is the form a secret is stored in.
func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// hashMatches compares the hash of a presented secret with a stored hash in
// constant time. An empty stored hash never matches.
func hashMatches(stored, presented string) bool {
	if stored == "" || presented == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(stored), []byte(hashSecret(presented))) == 1
}
