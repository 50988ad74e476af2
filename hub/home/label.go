package home

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/cluster"
)

// UsersPath is the parent of every home workspace.
const UsersPath = cluster.RootPath + cluster.Separator + "users"

const (
	// maxPrefix keeps labels readable and well under the 63-character
	// DNS label limit: 40 + 1 + hashLen.
	maxPrefix = 40
	hashLen   = 13
)

var hashEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Label returns the home workspace label of a user name (see the package
// doc for the rule). It is a DNS-1123 label of at most 54 characters.
func Label(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= maxPrefix {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	prefix := strings.Trim(b.String(), "-")
	if prefix == "" {
		prefix = "u"
	}
	sum := sha256.Sum256([]byte(name))
	// 9 bytes carry the 65 bits the first 13 base32 characters encode.
	return prefix + "-" + strings.ToLower(hashEncoding.EncodeToString(sum[:9]))[:hashLen]
}

// PathOf returns the home workspace path of a user name.
func PathOf(name string) cluster.Path { return UsersPath.Join(Label(name)) }

// IsPerson reports whether u gets a home workspace: see the package doc.
func IsPerson(u user.Info) bool {
	if u == nil {
		return false
	}
	name := u.GetName()
	if name == "" || strings.HasPrefix(name, "system:") {
		return false
	}
	// A confined identity (a service-account token, or any impersonated
	// identity) exists in one workspace only: it has no home, and nothing
	// about the person of the same name may be told to it.
	if _, confined := cluster.ConfinedTo(u); confined {
		return false
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup || g == serviceaccount.AllServiceAccountsGroup ||
			strings.HasPrefix(g, serviceaccount.ServiceAccountGroupPrefix) {
			return false
		}
	}
	return true
}
