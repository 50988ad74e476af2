package login

import (
	"net/url"
	"path"
	"strings"
)

// SafeRedirect returns then as a same-origin path that is safe to redirect
// to after login, or false. Only an absolute path on this hub is allowed:
// no scheme, no host, no "//" or "/\" (browsers treat both as
// protocol-relative), no backslashes or control characters anywhere
// (browsers rewrite "\" to "/"), and the decoded form must obey the same
// rules so that "%2F%2Fevil" or "/%5Cevil" cannot turn into a host after a
// second decode by some client. A "." segment or doubled slash is
// cleaned; any ".." segment is refused.
func SafeRedirect(then string) (string, bool) {
	if then == "" {
		return "/", true
	}
	if !plainPath(then) {
		return "", false
	}
	u, err := url.Parse(then)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	// Decode repeatedly and check each form: a path that only becomes
	// dangerous once some client decodes it (again) is refused rather
	// than normalised. Dot-dot segments are refused in every form.
	dec := u.EscapedPath()
	for range maxDecodes {
		if !plainPath(dec) || strings.Contains(dec+"/", "/../") {
			return "", false
		}
		next, err := url.PathUnescape(dec)
		if err != nil {
			return "", false
		}
		if next == dec {
			break
		}
		dec = next
	}
	if strings.Contains(dec, "%") {
		return "", false // still encoded after maxDecodes: no reason for that
	}
	clean := path.Clean(u.EscapedPath())
	if u.EscapedPath() != "/" && strings.HasSuffix(u.EscapedPath(), "/") {
		clean += "/"
	}
	out := clean
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out, true
}

// maxDecodes bounds how often a redirect target is percent-decoded.
const maxDecodes = 4

// plainPath: starts with exactly one slash and holds nothing a browser
// might reinterpret as a scheme or authority.
func plainPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsRune(p, '\\') {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
