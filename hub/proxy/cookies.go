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
// Impersonation headers go too (stripImpersonation), on every path that
// strips credentials.
func stripHubCredentials(h http.Header) {
	h.Del(login.CSRFHeader)
	stripImpersonation(h)
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

// stripHubSetCookies removes, from a provider's response, every Set-Cookie
// that would set one of the hub's own cookies. A provider answers on the
// hub's origin, so the browser would accept even a __Host- cookie from it:
// a provider could log the user in as someone else (plant a session) or
// end the user's session. Only the hub sets its cookies; a provider's own
// cookies pass unchanged and in order.
func stripHubSetCookies(h http.Header) {
	lines := h.Values("Set-Cookie")
	if len(lines) == 0 {
		return
	}
	kept := make([]string, 0, len(lines))
	for _, line := range lines {
		name, _, _ := strings.Cut(line, "=")
		if login.IsHubCookie(strings.TrimSpace(name)) {
			continue
		}
		kept = append(kept, line)
	}
	if len(kept) == len(lines) {
		return
	}
	h.Del("Set-Cookie")
	for _, line := range kept {
		h.Add("Set-Cookie", line)
	}
}
