package proxy

import (
	"net/http"
	"strings"

	"github.com/wharfhub/wharf/hub/login"
)

// stripHubCredentials removes what authenticates a browser to the hub
// itself from a request bound for a provider: the hub's own cookies
// (__Host-wharf_session, __Host-wharf_login and their old unprefixed
// names) and the CSRF header. A provider that saw the session cookie could
// replay it against the hub's API as the user. Other cookies (a provider's
// own session, the workspace cookie) pass.
func stripHubCredentials(h http.Header) {
	h.Del(login.CSRFHeader)
	lines := h.Values("Cookie")
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			name, _, _ := strings.Cut(part, "=")
			if login.IsHubCookie(strings.TrimSpace(name)) {
				continue
			}
			kept = append(kept, part)
		}
	}
	h.Del("Cookie")
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}
