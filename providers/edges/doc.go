// Package edges is the edges provider: Kubernetes clusters and ssh servers
// behind NAT, reached through agents (wharf-agent) that dial out to the hub
// and hold a revdial tunnel open.
//
// It owns the Edge API (edges.wharf.dev/v1alpha1, crd.yaml), mints join
// tokens, exchanges them for agent credentials, accepts the agents' control
// tunnels and their pickups, keeps each Edge's status (phase, conditions,
// URL, heartbeat) and serves consumer egress through the tunnels. It runs
// with replicas: single, because the tunnel registry lives in this process.
//
// # Threat model
//
// Attackers: anyone on the network (the agent paths are public), an
// authenticated hub user, and the admin of some workspace who wants to reach
// another workspace's edges or learn about them.
//
// Who can reach what:
//   - Public paths (/agent/…, Manifest.PublicPaths): the join exchange, the
//     agent's control websocket and revdial pickups. The hub strips every
//     X-Kedge-* header there and asserts no identity, so nothing on these
//     paths trusts an identity. Join and control are authorized by a
//     secret that is checked against one Edge, named by cluster and name in
//     the path; pickups by a single-use 192-bit revdial token.
//   - Every other path needs a hub-authenticated caller: minting a join
//     token needs update on edges/<name> in that workspace; egress needs
//     proxy on edges/<name> there, checked before the tunnel is looked up;
//     /metrics needs get on the non-resource /metrics in root (hub
//     admins).
//   - An agent serves the type its bundle names, and the bundle is
//     whatever the workspace admin handed the edge's operator; the agent
//     sends that type on every control handshake and a tunnel whose type
//     differs from the Edge's, or that names none, is refused (400). Otherwise a kubernetes
//     agent behind a server Edge would read the ssh egress's raw bytes as
//     HTTP, and any caller could write the X-Wharf-Edge-* headers and pick
//     their identity on the edge cluster.
//   - Every answer of a kubernetes edge carries Content-Security-Policy:
//     sandbox and nosniff: an edge (or any pod behind its API server's
//     services/proxy) serves on the hub's origin, and an HTML page that
//     ran there could read /auth/session's CSRF token and act with the
//     visitor's browser session in all their workspaces. The decision is the hub's (a SelfSubjectAccessReview with
//     the caller's own credential, see the egress code's Authorizer).
//
// Secrets:
//   - Join tokens and agent credentials are 256 bits from crypto/rand. Only
//     their SHA-256 is stored, in the Edge's annotations (never in spec or
//     status, never logged); comparisons are constant time. A hash of a
//     256-bit random secret gives a reader nothing to replay.
//   - A join token expires (joinTokenTTL, 1 h) and is single use: its hash
//     is removed by an update that carries the resourceVersion it was read
//     at, so of two concurrent exchanges only one gets a credential. A new
//     token replaces the old one.
//   - Every failed join or tunnel (wrong, spent or expired token, wrong
//     credential, missing or deleted edge, workspace that did not enable
//     edges, malformed path) gets the same 401, so the public paths do not
//     tell a prober which edges or workspaces exist.
//   - The credential is scoped to one Edge of one workspace. It rotates
//     after credentialRotation (24 h): the new one rides in the 101 answer,
//     the old one stays valid until the new one is first used, so a lost
//     answer does not lock the agent out. Deleting the Edge closes its
//     tunnel at once and the credential, stored on the object, dies with it.
//     A tunnel whose credential the Edge no longer accepts (a new join
//     replaced the agent, or an admin removed the annotation) is closed too.
//   - Every join attempt and every refused credential costs one live GET
//     of the Edge (the cache may lag a fresh token). Only the hub's
//     in-flight limits bound that rate (no per-address throttle here);
//     nothing on these paths writes unless a secret matched.
//
// The tunnel registry keys on the logical cluster (id "<cluster>/<name>"),
// so same-named edges of two workspaces never share a tunnel, and so does
// every cache here (sdk/clusters). A reconnecting agent's new tunnel
// replaces the old one; the old one's clean-up never removes the new one or
// marks the edge Disconnected.
//
// What a workspace's own users can do: whoever may update an Edge may mint
// a join token for it, and so may also write the hash annotations directly
// (which gives them nothing more than minting a token does): enrolling an
// agent for an edge is exactly that permission. Whoever may delete it
// revokes its agent. Whoever holds proxy on it reaches the edge as
// themselves (kubernetes edges impersonate the caller on the edge cluster,
// so its own RBAC applies). Nothing here lets them reach another
// workspace's edges: every path names the cluster, every check is made in
// that cluster, and the provider's own identity is scoped by the hub to
// workspaces that enabled edges.
//
// Not defended here: a hub admin, or anyone who can read the provider
// process's memory, sees every tunnel; the agent's side is in package
// agent's threat model.
package edges
