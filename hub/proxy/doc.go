// Package proxy holds the hub's two reverse proxies in front of provider
// plugins: the backend proxy (/services/providers/<name>/*, see [NewBackend])
// and the UI proxy (/ui/providers/<name>/*, see [NewUI]). Both dial the
// plugin's unix socket through the pooled transport the plugin host owns.
//
// # Threat model
//
// Providers trust the X-Kedge-* headers they receive, because only the hub
// can reach the plugin socket (a 0700 directory). The backend proxy is
// therefore the one place where a caller's identity is asserted to a
// provider, in the style of pinniped's impersonation proxy. Everything here
// fails closed: a request is forwarded with an identity only when every step
// below succeeded, and with no identity at all on a provider's public paths.
//
// Attacker: any HTTP client of the hub, authenticated or not, including an
// authenticated user of another workspace. Goals and the defence for each:
//
//   - Forge identity by sending X-Kedge-User etc. Every inbound header whose
//     name starts with X-Kedge- (any case) is deleted before forwarding, on
//     the inbound copy and again on the outbound request, and the verified
//     values are set afterwards with sdk.SetIdentity, so each appears exactly
//     once.
//   - Erase the verified identity with "Connection: X-Kedge-User": a proxy
//     drops headers named in Connection as hop-by-hop. Identity tokens are
//     removed from Connection (sdk.StripIdentity) before and after the
//     hop-by-hop pass, so nothing can name the injected headers.
//   - Act in a workspace they may not use, via X-Wharf-Workspace or the
//     __Host-wharf_workspace cookie. The selection is only a request; the
//     [IdentityResolver] verifies access and its refusal is a 403. Any
//     error the proxy does not recognise is a 500, never a forward.
//   - Learn which workspaces exist from that refusal (issue 11.9). The
//     resolver refuses a missing workspace and an inaccessible one with
//     the same [ForbiddenError], naming only the caller and the workspace
//     they sent, so the 403s are byte-identical but for that name.
//   - Guess credentials at line speed. Failed authentication here is
//     charged to the client address by hub/authn's throttle, which runs
//     in front of these routes as in front of the API (429 once over
//     budget).
//   - Smuggle extra groups: sdk.IdentityFrom splits X-Kedge-Groups on
//     commas, so a group name with a comma (or any value that is not a valid,
//     trimmed header value) is refused rather than forwarded, and an empty
//     user from the resolver is a 500 (it would look like a public path).
//   - Act as another identity with Impersonate-User, -Uid, -Group or
//     -Extra-*. The provider routes do not impersonate: the identity is the
//     authenticated caller, and every Impersonate-* header (any case) is
//     deleted before forwarding, on direct requests and on the hop, so a
//     provider never sees them and cannot replay them against the hub with
//     the forwarded Authorization. The UI proxy forwards none (allowlist).
//   - Reach a private path through a public prefix with dot segments or
//     escaped slashes ("/agent/../admin", "/agent%2F..%2Fadmin"). The path is
//     cleaned before the public-prefix check and the cleaned path is what is
//     forwarded; a path is public only if both its decoded and its escaped
//     form carry the prefix.
//   - Steal credentials through a provider's UI. The UI proxy forwards an
//     allowlist of content-negotiation and conditional headers only: never
//     Authorization, Cookie or identity. Its responses are therefore the
//     same for everyone, which is why they may be marked public.
//   - Poison caches with a missing bundle. UI error responses are no-store;
//     successful ones are cached for minutes, not hours.
//
// # The forwarding hop between hub replicas
//
// A replicas: single provider runs on one hub replica, the holder
// ([Target.Remote] on every other). A non-holder authenticates the caller
// and resolves the workspace exactly as above, then forwards the request
// to the holder's registered internal URL over TLS, verifying the holder's
// certificate against the CA bundle it registered (package replicas). The
// hop carries no X-Kedge-* header at all; the identity travels in
// X-Wharf-Replica-Assertion, HMAC-signed with the secret all replicas
// share, short-lived, bound to the holder, the provider, the method, the
// cleaned path and the query, and accepted once. Authorization is forwarded
// untouched. Added attackers and defences:
//
//   - Send a forged assertion (to any replica): a request carrying
//     X-Wharf-Replica-Assertion is authenticated by it alone; a bad,
//     expired, replayed, misdirected or duplicated assertion is a 401,
//     never a fallback to the bearer token or to no identity.
//   - Pair a captured assertion with forged X-Kedge-* headers or a
//     Connection header naming them: the holder strips every X-Kedge-*
//     header, the assertion and the hop marker (and Connection tokens naming
//     any of them) before asserting the verified identity, exactly as for a
//     direct request. A replay of the assertion itself is refused.
//   - Harvest assertions by posing as the holder: the non-holder dials only
//     registered URLs and checks the registered CA; an assertion is useless
//     for another path, provider or replica.
//   - Loop requests between replicas that briefly disagree on the holder:
//     a request marked as forwarded (X-Wharf-Replica-Hop, or carrying an
//     assertion) is never forwarded again; it gets 503 with Retry-After.
//     The marker is not trusted for anything else.
//   - Public paths are forwarded with the marker only, no identity; UI
//     assets with the allowlisted headers only.
//   - Plant X-Forwarded-For: the holder keeps the first replica's
//     X-Forwarded-* headers only on a request whose assertion verified;
//     otherwise ReverseProxy replaces them as for any client. A client's
//     X-Real-Ip is dropped too (attack review 17), so the only client
//     address a provider sees is the one the hub states.
//
// Cookies do reach the backend (a provider may keep its own session),
// except the hub's own credentials: the __Host-wharf_session and
// __Host-wharf_login cookies (and their pre-prefix names wharf_session and
// wharf_login) and the X-Wharf-CSRF header are stripped (hub/login), so a
// provider can never replay a user's browser session against the hub.
// The other way round, a provider's Set-Cookie for any of those names is
// dropped from its response: it answers on the hub's origin, so a browser
// would accept even a __Host- cookie from it, and it could plant a session
// of its choosing (login CSRF) or end the user's.
//
// Out of scope: authentication itself (done upstream; the proxy reads
// request.UserFrom), the provider's own authorization of the caller's token,
// and a compromised provider process.
//
// # In-flight bound
//
// The provider routes bypass the API chain and so its in-flight budget. A
// person could hold any number of slow requests to a provider (a body
// trickled to a provider that reads it, a stream), each a goroutine, a
// connection and the provider's capacity. [Backend.WithLimit] puts
// authenticated requests behind a per-tenant bound once the caller is
// known (hub/fairness: a flow control of its own, so provider streams
// never use up the API's budget, with the API's fair queues, and its
// refusals held in the API's tarpit); every such request counts, streams
// and upgrades included, since only the client declares them long-running
// here. Public paths carry no caller and are not bounded per tenant;
// requests forwarded by another replica were bounded there.
//
// # Wiring
//
// [WithProviderRoutes] mounts both proxies outermost, in front of the
// generic API chain (see its doc for why they bypass it):
//
//	backend := proxy.NewBackend(providers, resolver)
//	ui := proxy.NewUI(providers, portalShell)
//	h = proxy.WithProviderRoutes(h, backend, ui, c.Authentication.Authenticator, c.Authentication.APIAudiences)
//
// Wiring by hand instead: the backend proxy must run after authentication
// (request.UserFrom), but a provider's public paths ([Backend.IsPublic])
// must reach it without; and the upstream authentication filter deletes
// Authorization on success, so wrap it with [WithAuthorizationPreserved] to
// forward the caller's token byte for byte.
package proxy
