// Package cli is the wharf command line: cobra commands that wire the
// login flows (package login), the token cache (package tokencache) and
// kubeconfig merging (package kubeconfig) together, and the edge commands.
//
//	wharf login https://hub.example:9443          # browser, loopback + PKCE
//	wharf login https://hub.example:9443 --device # device code
//	wharf login https://hub.example:9443 --token  # dev mode static token
//	wharf credential ...                          # kubectl exec plugin
//
//	wharf edge create lab --type kubernetes [--wait]  # prints the join command
//	wharf edge join-command lab                       # again, with a fresh token
//	wharf edge list | get lab [-o yaml|json] | delete lab
//	wharf kubeconfig edge lab [-o file]               # kubectl through the edge, as you
//	wharf ssh web-1 [-l user] [-i key] [-- command]   # system ssh, host key pinned
//	wharf ssh-proxy web-1                             # ssh ProxyCommand
//	wharf ssh-config web-1 [--known-hosts]            # ~/.ssh/config block
//
//	wharf ws [use <path|name|id|..|-|~>] | tree | create <name> [--enter] | delete <name>
//
// The ws commands rewrite the current context's /clusters/<workspace>, as
// kcp's kubectl ws does, keeping the previous one in the "wharf-previous"
// context; a workspace is used only after its discovery answered the
// caller, and a missing one and one the caller may not access are refused
// with one message (errNoWorkspace), as the hub answers both alike.
//
// The edge commands act in the current kubeconfig context (--kubeconfig,
// --context) and its workspace, or -w <workspace>, which swaps the
// context server's /clusters/<workspace> path.
//
// # Threat model (edge commands)
//
// The attacker may be an admin of the workspace the caller works in, so
// anything read from an Edge is untrusted input:
//   - status.URL decides where the caller's hub credential is sent (the
//     edge kubeconfig and ssh-proxy). It is followed only when it is this
//     edge's own egress path (protocol.EgressBase of its cluster and name)
//     on the origin of the hub the context talks to; anything else is
//     refused rather than "fixed", so another host or another provider's
//     backend never receives the credential.
//   - status.sshHostKey is parsed as exactly one SSH public key and
//     re-encoded before it is written into a temporary 0600 known_hosts
//     file, so it cannot add markers (@cert-authority), options or lines.
//     An empty key refuses the connection: no trust on first use. The
//     pinning options precede any -o passthrough, and ssh keeps the first
//     value of an option, so passthrough cannot loosen them.
//   - The join bundle pins the CA of the context, never the system roots,
//     and is refused when the context has none. A join token reaches only
//     stdout, inside the bundle; it is never logged or put in an error.
//   - Kubeconfigs written with -o are 0600: they hold the caller's
//     credential or its exec plugin.
//
// Tokens are never written to stderr: `wharf credential` prints an
// ExecCredential for kubectl on stdout, which is its protocol, and the
// join commands print the bundle on stdout because it is their output.
package cli
