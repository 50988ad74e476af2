// Package agent is wharf-agent: the edge side of the edges provider. It
// joins an edge once with a join bundle, keeps a revdial tunnel to the hub
// open, and answers the connections the provider dials through it: HTTP to
// the edge cluster's API server for kubernetes edges, a raw TCP stream to
// sshd for server edges.
//
// # State
//
// <state-dir> (0700) holds state.json (hub URL, pinned hub CA, cluster,
// edge, type) and credential (0600), each written to a temp file and
// renamed, so a crash never leaves half a credential. The join token is
// never written anywhere: it is exchanged once at POST …/join, and kept in
// memory only when a saved credential made it unnecessary (it is then
// exchanged if the hub refuses that credential, which happens when the
// Edge was deleted and created again).
//
// # Threat model
//
// Assets: the agent credential (it lets whoever holds it serve as this
// edge, and so see the requests routed to it), the edge cluster's
// credential the agent uses (kubeconfig or in-cluster service account),
// and the edge's sshd.
//
// The network between the agent and the hub is hostile.
//   - TLS to the hub trusts only the CA pinned in the join bundle, TLS 1.2
//     or later; there is no switch to skip verification. A machine's trust
//     store or a public CA cannot vouch for a fake hub.
//   - The credential goes only on the control handshake (revdial's
//     ControlHeader); pickups, which their single-use token authorizes,
//     carry none. revdial follows only connPaths on the control host, so a
//     conn-ready cannot send the agent elsewhere.
//   - Neither the token nor the credential is logged, put in an error, or
//     sent anywhere but the hub's join and control endpoints.
//   - A credential the hub rotates (HeaderRotatedCredential on the 101) is
//     saved before the tunnel carries anything; if saving fails the tunnel
//     is dropped rather than run on a credential the next start would not
//     have.
//
// The agent listens on nothing: no metrics, no pprof, no health port.
// Every byte it serves arrives over the tunnel it dialed, so nothing on
// the edge's network can reach it, and it cannot be used to enter the
// edge's network from there.
//
// The hub side (the provider) is trusted to authorize callers; the agent is
// the last line for the edge cluster's own credential:
//   - every inbound Authorization, Proxy-Authorization, Cookie,
//     Impersonate-* and X-Wharf-Edge-*/X-Kedge-* header is removed, so a
//     caller's hub credential never reaches the edge and no caller can
//     choose whom the agent impersonates;
//   - impersonate mode (the default) sets Impersonate-User from the
//     provider's X-Wharf-Edge-User and one Impersonate-Group per
//     X-Wharf-Edge-Group, with --impersonate-prefix, after hop-by-hop
//     header removal (a Connection header cannot strip them); system:
//     groups are dropped, and without a prefix a system: user other than
//     the hub's own system:wharf:* is refused (403): a hub service account
//     is system:serviceaccount:<ns>:<name> with names a workspace admin
//     picks, and must not become the edge's own service account or a
//     control-plane component. A request without a user is refused (401),
//     so it never acts as the agent;
//   - agent mode forwards everyone as the agent's identity, only when
//     chosen with --identity agent; the edge's RBAC then sees one user;
//   - an edge kubeconfig that itself impersonates is refused in
//     impersonate mode (client-go would silently overwrite the caller).
//
// Server edges carry raw TCP to --ssh-addr only; SSH runs end to end and
// the agent sees ciphertext. The sshd host key is read (no
// authentication) on every connect and reported, so the CLI can pin it.
//
// The state dir is created 0700; an existing one that others can access
// is refused rather than chmod-ed (it may be a shared directory named by
// mistake).
//
// Residual risks: whoever controls the hub or the provider controls what
// the agent forwards (within the edge credential's rights); the credential
// file is readable by root on the edge machine; a --join bundle on the
// command line is visible to local users in the process list until the
// agent exits (the token in it is single-use and short-lived, and spent
// by the first run; --join-file avoids it).
package agent
