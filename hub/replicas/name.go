package replicas

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultName is a replica name stable across restarts and distinct for
// two replicas on one machine: the host name plus a short digest of the
// (absolute) data dir.
func DefaultName(dataDir string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "hub"
	}
	h := sanitize(host)
	if h == "" {
		h = "hub"
	}
	sum := sha256.Sum256([]byte(dataDir))
	return h + "-" + hex.EncodeToString(sum[:3])
}

// sanitize keeps a host name usable as an etcd key segment and a Lease
// holder identity: lowercase letters, digits, '-' and '.'.
func sanitize(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// ValidateName refuses a name that cannot be an etcd key segment and a
// Lease holder identity: it must be a DNS-1123 subdomain.
func ValidateName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("replica name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}
