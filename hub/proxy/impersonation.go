package proxy

import (
	"net/http"
	"strings"
)

// impersonatePrefix starts every impersonation header: Impersonate-User,
// -Uid, -Group and -Extra-<key>.
const impersonatePrefix = "impersonate-"

// stripImpersonation deletes every Impersonate-* header, in any case. The
// provider routes do not impersonate: the identity a provider sees is the
// authenticated caller, asserted in X-Kedge-*. Passing the headers on
// would let a provider that calls the hub with the forwarded Authorization
// act as whoever the caller named, in whatever workspace the provider
// calls, outside the confinement the API applies (hub/server).
func stripImpersonation(h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), impersonatePrefix) {
			delete(h, k)
		}
	}
}
