// Package home gives every person a home workspace, root:users:<label>,
// and looks it up for the proxies and the identity endpoints.
//
// # Who gets a home
//
// Persons do: users authenticated by OIDC, by a browser session or by a
// static token. Nobody else does (see IsPerson):
//
//   - names starting with "system:": service accounts
//     (system:serviceaccount:*), the hub's own identities
//     (system:wharf:*, providers included), the loopback client
//     (system:apiserver) and system:anonymous;
//   - members of system:serviceaccounts, whatever their name;
//   - identities confined to one workspace (cluster.ConfinedTo): hub
//     service-account tokens and every impersonated identity. An
//     impersonated "alice" is not alice: whoami and SelfSubjectReview
//     report no home and no workspace of hers, only what the confined
//     identity may use, which is at most the workspace of the
//     impersonation (issue 11, finding 7);
//   - members of system:masters: the generated wharf-admin token and
//     break-glass identities. They may use every workspace anyway, and a
//     home would only be clutter. People named by --admin-user or in an
//     --admin-group other than system:masters are persons and get one.
//
// # The label
//
// Label derives the last path segment from the user name alone, so every
// replica computes the same one without coordination:
//
//	<prefix>-<hash>
//
// prefix is the name lowercased, with every run of characters outside
// [a-z0-9] replaced by one dash, trimmed of dashes and cut to 40
// characters; hash is the first 13 characters of the lowercase, unpadded
// base32 SHA-256 of the exact user name (65 bits). A name with no usable
// character gets the prefix "u". "Alice@Example.com" becomes
// "alice-example-com-<hash>"; "alice@example.com" has the same prefix but
// another hash, because the hash covers the name byte for byte.
//
// Two names colliding in 65 bits is not expected, but it is not assumed
// impossible either: each home records its owner's exact user name in the
// wharf.dev/home-owner annotation, and a user whose label is taken by
// another owner gets no home (logged) rather than someone else's.
//
// # Creation
//
// Ensure creates the home through the Workspace REST storage, exactly as
// kubectl create would: the etcd create-if-absent transaction of the
// Index allocates the id, so concurrent first requests on several replicas
// create it once and the losers see AlreadyExists, which is success when
// the owner matches. Within a replica, singleflight collapses concurrent
// first requests into one creation. The workspace initializer binds the
// user to admin (wharf:workspace-owner); Ensure then waits, bounded, until
// the authorizer actually grants the user access there, so the request
// that triggered the creation already sees a usable home. root:users is
// created by the hub itself with nobody bound in it, so ordinary users
// cannot list the homes.
//
// # Where it runs
//
// WithHomeWorkspace wraps the hub's request authenticator rather than
// sitting in the HTTP handler chain. Every authenticated entry point (the
// API chain, the provider proxies, which authenticate outside that chain)
// shares the authenticator, and a filter placed after authentication in
// the generic chain would also run after authorization, so a newcomer's
// first request, typically refused because they have no rights yet, would
// never create the home. Once the home exists the wrapper costs a SHA-256
// of the user name and two map lookups: no etcd round trip.
//
// # Threat model
//
// The hub, not the user, writes the home and root:users; the user cannot
// choose the label, so cannot claim another user's home. Ownership is
// checked against the annotation before a home is handed out. A failed or
// slow creation never fails authentication: the request proceeds without a
// home, and the next one retries.
package home
