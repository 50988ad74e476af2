// Package login is the hub's browser login (OIDC authorization code flow
// with PKCE), its session cookie and the CSRF defence for
// cookie-authenticated requests, plus what the CLI needs to bootstrap:
// /.well-known/wharf and the development /auth/token-login, all behind a
// per-address rate limit.
//
// # Flow
//
//	GET /auth/login?then=/portal/x
//	  → Set-Cookie __Host-wharf_login=<sealed {state id, nonce, then}>; PKCE verifier = HMAC(hub key, state id) (Path=/, 10 min)
//	  → 302 IdP /authorize?state=<signed state id>&code_challenge=S256(verifier)&nonce=…
//	GET /auth/callback?code=…&state=…
//	  → state: HMAC valid, unexpired, equal to the cookie's state id, unused (etcd)
//	  → token exchange with the verifier; ID token verified (nonce too) and
//	    mapped by the hub's bearer OIDC authenticator
//	  → etcd record {sealed refresh token} with a lease until the session ends
//	  → Set-Cookie __Host-wharf_session=<sealed {session id, user, groups, CSRF token, expiry, revalidate}>
//	  → 302 then
//	GET /auth/session → {user, groups, csrfToken, expiry}; no csrfToken
//	  when a page script asks (Fetch Metadata, see browserFetch)
//	POST /auth/token-session token=… (dev, same origin) → the same session
//	  cookie for a static token; the token is not kept
//	portal document navigation → the shell page carries the CSRF token
//	  (DocumentCSRF), read and removed by the shell module
//	POST /auth/logout (CSRF-checked) → etcd record deleted, cookie cleared
//
// Libraries: coreos/go-oidc/v3 and golang.org/x/oauth2 on the relying
// party side (see provider.go for why not zitadel's rp); the session is
// verified per request by [SessionAuthenticator], the fourth member of
// the hub's authenticator union (hub/authn).
//
// # Keys
//
// Two hub-wide 256-bit secrets from bootstrap.SharedSecret, identical on
// every replica: "login-state-key" (state HMAC and pre-login cookie AEAD)
// and "session-key" (session cookie AEAD and refresh tokens at rest).
// Each use derives its own subkey (HMAC-SHA256 of the secret and a
// purpose label), and every sealed value is bound to its name as AEAD
// additional data, so no value can be replayed in another role.
//
// # Threat model
//
// Attacker: any web origin the victim visits (CSRF, login CSRF, open
// redirects), anyone who sees URLs (browser history, Referer, proxy and
// IdP logs), a network observer (defeated by TLS; cookies are Secure), a
// malicious provider plugin receiving forwarded requests, a client
// flooding the login endpoints, and someone reading hub logs.
//
//   - Forged or tampered state: the state is HMAC-SHA256 signed and
//     expires after 10 minutes; any change fails verification.
//   - Replayed state (a leaked callback URL): state ids are single-use
//     across replicas through an etcd create-if-absent transaction with a
//     lease TTL. Both defences are used, not one of them: the state is
//     also bound to the HttpOnly pre-login cookie of the browser that
//     started the login, so a callback URL injected into another browser
//     (login CSRF: logging the victim in as the attacker) fails even
//     before first use, while the etcd record stops a replay in the same
//     browser (history, a second tab) and a race between replicas. One
//     consequence: only the latest login started in a browser can
//     complete; an older tab must start again.
//   - Code interception: PKCE S256. The verifier never leaves the hub:
//     it is an HMAC of the attempt's random id under a hub-wide key, so
//     any replica recomputes it at the callback and nothing is stored per
//     attempt (an unauthenticated /auth/login writes nothing). It appears
//     only in the token request from hub to IdP. The nonce binds the ID token to the attempt.
//   - Stolen or forged session cookie: the cookie is AES-256-GCM sealed
//     (unreadable, unforgeable), HttpOnly (no script reads it),
//     Secure, SameSite=Lax, and expires (--session-max-age). The session
//     must also still exist in etcd, so logout ends it on every replica
//     at once. The cookie holds no IdP token; the refresh token stays in
//     etcd, sealed, keyed by session id, with a lease ending with the
//     session.
//   - Planted cookies (login CSRF from a sibling subdomain, or any
//     origin that may set cookies for a parent domain): every cookie the
//     hub sets or reads is named __Host-…, so browsers accept it only
//     from the hub's exact origin with Secure, Path=/ and no Domain. The
//     old names wharf_session and wharf_login are never read, however
//     valid their content; they are still stripped towards providers.
//   - Stale identity: the cookie's identity is revalidated when the ID
//     token it came from expires: refreshed at the IdP with the stored
//     refresh token and mapped again (groups changes apply), or, without
//     one, the session stops authenticating.
//   - CSRF on the API and the provider proxies: cookie-authenticated
//     state-changing requests need a same-origin Origin (or Referer) AND
//     the X-Wharf-CSRF header equal to the session's CSRF token (see
//     [WithCSRF]). Cookie-authenticated websocket upgrades need both too:
//     an upgrade is a write channel (exec, port-forward, the edges' ssh
//     pipe) and provider scripts share the origin, so same Origin alone
//     would let one ride the session; browsers cannot add the header to
//     a WebSocket, so in effect only bearer upgrades pass. A request with any
//     Authorization header is a bearer request: the cookie is ignored
//     entirely, so a bad bearer token cannot fall back to the cookie and
//     dodge the CSRF check.
//   - Open redirects: then must be a same-origin path ([SafeRedirect]);
//     anything else is refused at /auth/login, before the IdP is involved.
//   - Session theft through a provider: the backend proxy strips the
//     __Host-wharf_session and __Host-wharf_login cookies (and the
//     legacy wharf_session and wharf_login) and X-Wharf-CSRF (hub/proxy).
//   - Tokens in URLs or storage: none. The portal gets only the CSRF token
//     (not a credential alone), from its own top-level document
//     ([Login.DocumentCSRF]); nothing goes to localStorage. Provider UI
//     scripts run in the portal's origin, so /auth/session withholds the
//     token from page scripts (Sec-Fetch-Mode present, not a document
//     navigation): a provider script can read as the user with plain
//     fetch, but cannot forge a state-changing request. Residual: a
//     same-origin script that opens a second portal window can read that
//     window's DOM before its shell removes the token (see portal/doc.go).
//   - Login CSRF: /auth/token-session needs a same-origin Origin, so no
//     other site can sign a visitor in as the site's own account.
//   - Brute force and floods: /auth/login, /auth/callback,
//     /auth/token-login and /auth/token-session are rate-limited per client address (token
//     buckets in a bounded LRU). X-Forwarded-For is believed only from
//     --trusted-proxy-cidrs, read right to left, so a client cannot pick
//     its own bucket by sending the header.
//   - Probing: every rejected state answers one 400, every rejected cookie
//     or token one 401; logs carry a reason but never a token, cookie
//     value or verifier (session ids appear shortened).
//
// Cost per cookie request (BenchmarkSessionAuthenticate): opening the
// cookie is about 2µs; the etcd read that makes logout immediate on every
// replica dominates (about 0.3ms against embedded etcd on 2 busy cores).
//
// Not covered: a compromised IdP or hub host; revocation at the IdP
// before the ID token expires (bounded by the ID token lifetime). A
// same-site sibling origin can no longer plant the hub's cookies, but it
// still counts as same-site for SameSite=Lax; the Origin and CSRF-token
// checks, not SameSite, stop its requests.
package login
