// Package portal serves the browser portal: the shell page (plain ES
// modules and CSS under shell/, no build step, embedded with go:embed) at
// "/" for browser navigations, at every /ui/ route that is not a file,
// and as the fallback of the UI proxy for a provider's client-side routes,
// so a hard refresh anywhere keeps the portal chrome. The shell's own
// files are under /ui/shell/ (shell/TESTIDS.md lists the hooks the browser
// tests rely on; sdk/ui.go is the contract with provider UIs).
//
// # Threat model
//
// A provider's UI is a script the shell imports from the provider
// (/ui/providers/<name>/main.js). It runs in the portal's origin, with
// the same powers as the shell's own code, so the shell cannot hide
// anything from it that the browser does not hide. Assume that script is
// hostile (a compromised provider, or one that renders a workspace
// admin's data unsafely). What it must not get:
//
//   - Credentials. The session cookie is HttpOnly (hub/login); the portal
//     never holds a bearer token; nothing secret is in localStorage,
//     sessionStorage, a cookie readable by script or a global. The only
//     script-readable cookie is the current workspace's path.
//   - The CSRF token, which turns the user's cookie into state-changing
//     requests. The hub writes it only into the shell document of a
//     top-level navigation (Sec-Fetch-Mode: navigate, Sec-Fetch-Dest:
//     document), served no-store; /auth/session withholds it from page
//     scripts (hub/login). The shell module reads the <meta> and removes it
//     before it imports any provider script, and keeps it in a module
//     closure. It captured fetch and Headers at load, so a provider that
//     replaces them later does not see the header go by.
//   - The user's write access. A provider's own fetch carries the cookie
//     (same origin) but not the token, so the hub's CSRF check refuses its
//     POST, PUT, PATCH and DELETE (403). The api.fetch the shell hands a
//     provider adds the token only for the provider's own backend
//     (/services/providers/<name>/) and, in the current workspace, the
//     API groups the provider owns (its CatalogEntry's spec.apis). Reads
//     (GET, watches) are not confined: any same-origin script can read
//     what the user can read, and the portal cannot change that.
//
// A second portal window is no way around that: every shell document is
// served with Cross-Origin-Opener-Policy: noopener-allow-popups, so a
// provider script that window.open()s one gets a closed handle and cannot
// read its DOM (or patch its globals) before its shell removes the token
// (portal:27 of test/e2e/portal/attack_test.go). Nor is a websocket:
// cookie-authenticated upgrades need the token too (hub/login.WithCSRF),
// which a browser's WebSocket cannot send. Nor is a service worker: the
// CSP has worker-src 'none' and the portal refuses every request marked
// Service-Worker, so a provider cannot leave a worker behind that
// outlives its session and answers the portal's navigations (portal:26).
// And api.fetch's "API groups the provider owns" follow the hub's rule
// (hub/enablement.ProviderOfGroup): a manifest claiming a group another,
// older provider owns gets no token for it (portal:32).
//
// Residual risks, accepted and documented: a hostile provider script can
// read whatever the user may read; a browser that ignores
// noopener-allow-popups (Chromium before about 2025) still lets it read a
// popup of the shell before the shell removes the token; and it can draw
// a convincing fake of the portal's chrome inside its panel. Browsers without Fetch
// Metadata (older than about 2023) get no token at all: the portal then
// reads but refuses to change anything, and says so.
//
// The shell page carries a strict Content-Security-Policy: scripts from
// this origin only and no inline script (so an injected <script> or
// on*= attribute does not run), no plugins, no <base>, forms to this
// origin only, and frame-ancestors 'none' (with X-Frame-Options: DENY)
// against clickjacking. All shell rendering uses textContent, never
// innerHTML, so names and messages from the API are never markup.
package portal
