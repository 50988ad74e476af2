// Package testkit runs a provider in-process under a minimal stand-in for the
// Wharf hub, so provider authors test their backend and UI with the real
// identity contract in go test:
//
//	hub := testkit.Start(t, myProvider{}, testkit.Options{
//		Users: map[string]sdk.Identity{"alice-token": {User: "alice", Tenant: "root:acme"}},
//	})
//	req, _ := http.NewRequest("GET", hub.BackendURL("/whoami"), nil)
//	req.Header.Set("Authorization", "Bearer alice-token")
//	resp, _ := hub.Client().Do(req)
//
// The stand-in does what the hub's proxies do, and nothing more:
//   - /services/providers/<name>/X: bearer token to identity via
//     Options.Users (401 otherwise, except under Manifest.PublicPaths), every
//     inbound X-Kedge-* header stripped (any case, and Connection-named ones),
//     the verified identity injected, Authorization forwarded untouched,
//     responses streamed unbuffered;
//   - /ui/providers/<name>/X: only file-like paths (last segment contains a
//     dot) reach the provider, with X-Kedge-Base-Path set and no credentials;
//     other paths get a placeholder portal shell.
//
// The provider runs through sdk.NewServer, the same lifecycle the plugin
// process runs (Describe, Start with a HubConfig, Stop at cleanup), and
// serves on a real unix socket in a 0700 directory. Only the go-plugin
// process boundary is skipped; sdk/plugin's tests cover that.
//
// Not simulated: workspace resolution and access checks (the identity's
// Tenant is used as-is), OIDC, RBAC, and the hub API behind CallerConfig
// (point Options.HubURL at your own fake if you need one).
package testkit
