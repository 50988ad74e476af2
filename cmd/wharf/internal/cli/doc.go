// Package cli is the wharf command line: cobra commands that wire the
// login flows (package login), the token cache (package tokencache) and
// kubeconfig merging (package kubeconfig) together.
//
//	wharf login https://hub.example:9443          # browser, loopback + PKCE
//	wharf login https://hub.example:9443 --device # device code
//	wharf login https://hub.example:9443 --token  # dev mode static token
//	wharf credential ...                          # kubectl exec plugin
//
// Tokens are never written to stdout or stderr: `wharf credential` prints
// an ExecCredential for kubectl on stdout, which is its protocol, and
// nothing else prints token material.
package cli
