// Package fairness bounds how many requests one tenant may have in flight
// on the hub at once, so that no tenant can use up the hub-wide budget.
//
// # Threat model
//
// The attacker is any person with a token, and therefore admin of their
// own home workspace and of every workspace they create below it. The
// hub's in-flight budget (--max-requests-inflight read-only,
// --max-mutating-requests-inflight mutating, as in kube-apiserver) is one
// pool shared by every workspace. Upstream's max-in-flight filter keeps
// one counter for everybody, so one person holding slow requests (the
// headers of a POST, then a body byte every few seconds, each holding its
// slot until the request timeout) made every other caller's writes fail
// with 429, --admin-user included (attack review B10). The rules:
//
//   - Every request that is not long-running (watches, exec and the like,
//     as upstream's LongRunningFunc says) takes one slot of the hub-wide
//     budget and one of its tenant's share, read-only (get, list, watch)
//     and mutating separately. A tenant's share is
//     --max-requests-inflight-tenant-fraction of each budget (at least one
//     slot). Over either, the answer is 429 TooManyRequests, a Status with
//     Retry-After: 1, the same whichever bound was hit, so that a caller
//     learns nothing about other tenants' load.
//   - The tenant is chosen so that it cannot be multiplied cheaply. A
//     person is the tree of her home workspace (root:users:<label>).
//     An identity confined to a workspace (a service-account token, an
//     impersonated identity: hub/cluster ConfinedTo) is the tree of that
//     workspace: its top, the home for root:users:<label>:..., else the
//     top-level child of root. A person mints any number of service
//     accounts and impersonates any name in her home and its children,
//     and all of them share her one share. Whoever a person lets into her
//     workspaces spends from her tree's share when confined there, and
//     from their own otherwise.
//   - Other identities (providers, system users) are one tenant per user
//     name; a confined identity whose workspace is unknown shares one
//     tenant with every other such identity (it is denied anyway).
//   - Hub administrators (--admin-user, --admin-group, system:masters, so
//     the loopback client too) are neither counted nor limited, as
//     upstream never refuses system:masters: the hub and its
//     administrators are never locked out by tenants.
//   - Health probes, GET of exactly /livez, /readyz and /healthz, are
//     neither counted nor limited, as upstream's "probes" FlowSchema puts
//     them in the exempt priority level. Anonymous callers (answered on
//     those paths only, hub/authn) are one tenant, so otherwise anybody
//     reaching the hub could hold that share and fail every kubelet's and
//     load balancer's probe. The handlers are in-memory checks of bounded
//     time; their sub-paths and other verbs are counted as any request.
//   - The limit runs after authentication, impersonation and
//     authorization, before any handler reads the request body, so a slow
//     body holds a slot of its own tenant only. It replaces upstream's
//     max-in-flight filter, which is switched off.
//
// API Priority and Fairness (k8s.io/apiserver/pkg/util/flowcontrol) would
// do this with queues and shuffle sharding, but it needs the
// flowcontrol.apiserver.k8s.io API served and its configuration
// controller; its flow distinguisher is the user name, so service
// accounts would still each be a flow of their own. The hub serves no
// such API, so this package keeps upstream's simpler non-queuing model
// and adds a per-tenant bound.
package fairness
