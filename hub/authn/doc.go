// Package authn builds the hub's request authenticator: a union of bearer
// token authenticators tried in a fixed order, and, around the hub's whole
// chain, anonymous access to the health endpoints (anonymous.go).
//
//  1. Static tokens: the generated admin token, then --token-auth-file.
//  2. Hub service-account tokens (package hub/serviceaccounts).
//  3. OIDC ID tokens from one issuer (--oidc-* flags).
//  4. The browser session cookie (hub/login), only for requests without
//     Authorization: a bearer request never falls back to the cookie.
//
// # OIDC implementation
//
// OIDC tokens are verified by the upstream k8s.io/apiserver JWT
// authenticator (plugin/pkg/authenticator/token/oidc) configured with an
// apiserver.JWTAuthenticator, not by calling coreos/go-oidc directly. The
// upstream authenticator already does issuer discovery, JWKS caching with
// refetch on an unknown key id (key rotation), audience and issuer checks,
// the email_verified rule, required claims and claim prefixes, and it is
// what kube-apiserver ships: the flags mean exactly what they mean there,
// and we inherit its security fixes instead of re-deriving them.
//
// # Threat model
//
// Attacker capabilities considered: sending arbitrary bearer tokens
// (forged, expired, minted for another client or by another issuer,
// alg "none" or HMAC-signed with a public key), reading hub logs, and
// probing error responses to learn which check failed.
//
//   - Anonymous requests are refused, with one exception: GET and HEAD of
//     /livez, /readyz, /healthz and their clean sub-paths (IsHealthPath),
//     presenting no credential at all (no Authorization header, no session
//     cookie, no client certificate) and addressing no workspace (no
//     /clusters/ prefix), are system:anonymous in group
//     system:unauthenticated, so that kubelet and load balancer probes need
//     no token, as kube-apiserver's (WithAnonymousHealth: upstream's
//     anonymous authenticator behind union.NewFailOnError). The authorizer
//     then allows GET of exactly the three paths and nothing else
//     (hub/server builtinpolicy.go): sub-paths and HEAD get kube-apiserver's
//     403. Every other request without a valid credential is 401 as
//     before: another path or method, an unclean spelling
//     (/readyz/../metrics, //readyz, /readyz/%2e%2e/metrics, /readyz/), and
//     a rejected credential on a health path (the failure is final, as
//     upstream's). The anonymous identity never joins
//     system:authenticated and gets no home workspace.
//   - Failures answer the generic apiserver 401 Status ("Unauthorized").
//     The reason is never sent to the client, so a prober cannot tell an
//     expired token from a bad signature or an unknown static token.
//   - Only asymmetric algorithms (RS*, ES*, PS*) are accepted, so "none"
//     and HS256-with-the-public-key confusion are impossible.
//   - The IdP is reached over TLS only (the issuer URL must be https);
//     --oidc-ca-file pins the IdP's CA instead of the system roots.
//   - Tokens never reach logs. Rejections are logged with sha256:<8 hex>
//     of the token so that an operator can correlate reports with log
//     lines without the log being a credential store.
//   - OIDC usernames are prefixed (--oidc-username-prefix, by default the
//     issuer URL + "#" unless the claim is email) and groups may be
//     prefixed, so an IdP user cannot claim a hub-internal name such as
//     wharf-admin or system:masters. Operators who set the prefix to "-"
//     accept that risk explicitly.
//   - Guessing is throttled per client address (Throttle, issue 11.12), on
//     the API and the provider routes alike. Every failed authentication
//     that presented a credential (Authorization header or session
//     cookie) takes a token from the address's bucket (refilled at
//     --authn-failure-rate-limit per second, holding at most
//     --authn-failure-rate-burst). X-Forwarded-For is believed only from
//     --trusted-proxy-cidrs, as for the login endpoints. Requests without
//     a credential guess nothing and are neither charged nor refused.
//   - An address over budget gets 429 Status with Retry-After for a
//     guessable credential (an opaque bearer token: the admin token, the
//     --token-auth-file tokens), which is then NOT evaluated: were it
//     evaluated, a correct guess would still be served and the throttle
//     would slow nobody. The exception is a credential that authenticated
//     from the same address before (the SHA-256 of address and credential
//     is kept in a bounded LRU): people behind a shared NAT or proxy with
//     an attacker keep working, while a token its owner used elsewhere is
//     no bypass for a guesser here. The known set is no authentication
//     cache: a remembered credential is still fully verified, so
//     revocation stays immediate.
//   - Unguessable credentials (JWTs: service-account and OIDC tokens;
//     the sealed session cookie) cannot be guessed, but evaluating a
//     forged one still costs a signature check and a failed
//     authentication: a flood of JWT-shaped tokens, once always
//     evaluated, cost the victim 45 times its latency (outside attack
//     review, row 34). Over budget they too are refused unevaluated,
//     unless known good: one that authenticated from any address (where
//     it worked does not matter, nobody guessed it), one the hub minted
//     (TokenRequest), or a session cookie whose seal is the hub's (an
//     AEAD open, no store read: a first login or a refresh behind the
//     address keeps working). A known one that fails is forgotten, and a
//     failed cookie is remembered as bad, so a credential that once
//     worked cannot carry a flood (sealed.go). What a flooder denies
//     neighbours behind her address, for as long as she keeps failing:
//     opaque tokens never used from there, and ID tokens that never
//     worked anywhere yet (a fresh OIDC token); attack review B9's fresh
//     service-account token and first browser login keep working.
//   - In total: failures also charge one hub-wide bucket
//     (--authn-failure-rate-limit-total, --authn-failure-rate-burst-total;
//     100/s, 2000 by default, 0 for none). Over it, a credential that
//     verifies is still served: other people's failures must not refuse
//     it (outside attack review B-F: random tokens from 250 addresses
//     kept the bucket empty, and a valid static token from an address
//     that had never failed got 429 in 6 of 8 tries). An opaque token is
//     verified by the throttle itself (static and provider tokens: a
//     lookup, cheaper than the 429), served if good, else refused and
//     charged to its address, so each address still guesses at most its
//     own budget. A JWT or cookie not known good (a signature check) is
//     evaluated only from an address that has not failed since it earned
//     its last token back: a flood spread over addresses costs at most
//     --authn-failure-rate-limit evaluations a second per address, not
//     its burst. Known-good credentials, the hub's own tokens and the
//     generated admin token always pass.
//   - Per address prefix (an IPv4 /24, an IPv6 /64; login.PrefixOf):
//     failures also charge the prefix's budget, ten times an address's,
//     and over it the prefix is refused as one address. Past the hub-wide
//     budget a JWT or cookie not known good is evaluated only if its
//     prefix has not failed lately either, and a failure evaluated that
//     way drains the prefix's budget: forged tokens from a fresh address
//     per request (third outside review, C-F: all 401, never 429) cost a
//     verification per prefix per refill of its burst, not one each.
//   - The hub's own loopback token and the generated admin token are known
//     good from every address from the start, so a flood from a shared
//     address cannot lock the hub, or its administrator after a restart,
//     out.
//   - A credential is the first Authorization value (what the bearer token
//     authenticator evaluates), so varying further values neither makes a
//     new guess nor a new known-good entry, and unguessable credentials are
//     remembered in a set of their own, never per address: nobody can
//     flush the set of opaque tokens known per address with JWTs.
//   - Bounds: buckets and known credentials live in LRUs of 10,000
//     entries each; an attacker with more addresses than that (an IPv6
//     prefix, say) gets fresh buckets, but not a fresh hub-wide bucket.
//     Per-address throttling cannot stop a distributed guesser; long
//     random tokens are the defence there.
//
// Not covered here: revocation of OIDC tokens before expiry (the IdP's
// token lifetime bounds it). A token naming an unknown key id makes
// upstream refetch the JWKS (that is how rotation works); concurrent
// refetches are coalesced but not rate limited (JWTs are evaluated even
// from a throttled address, see above), so a flood of such tokens turns
// into requests to the IdP.
//
// Cost: a static token is a map lookup (about 0.5µs); an OIDC token is a
// signature verification and claim mapping (about 0.1ms on 2 cores) with
// the key set cached; a service-account token is a signature check plus a
// consistent etcd read of its ServiceAccount (about 0.35ms on 2 cores).
// BenchmarkAuthenticate measures all three; results are not cached, so a
// deleted service account or an expired token fails at once.
package authn
