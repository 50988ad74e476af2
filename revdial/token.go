package revdial

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"path"
	"strings"
)

// tokenBytes is 192 bits: comfortably above the 128-bit floor, and a
// multiple of 3 so the base64 form has no padding.
const tokenBytes = 24

// newToken returns a fresh unguessable pickup token.
func newToken() string {
	var b [tokenBytes]byte
	// crypto/rand.Read never returns an error on supported platforms; it
	// crashes the program instead of returning weak bytes.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// connPath builds the path the agent dials for a pickup.
func connPath(prefix, token string, warm bool) string {
	p := strings.TrimRight(prefix, "/") + "/" + token
	if warm {
		p += "?warm=1"
	}
	return p
}

// tokenFromPath extracts the token: the last segment of the path.
func tokenFromPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	t := path.Base(p)
	if len(t) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return ""
	}
	return t
}

// isWarmPath reports whether connPath asks for a warm pickup.
func isWarmPath(connPath string) bool {
	u, err := url.Parse(connPath)
	if err != nil {
		return false
	}
	return u.Query().Get("warm") == "1"
}
