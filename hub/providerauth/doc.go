// Package providerauth gives each provider plugin its own identity.
//
// At every plugin (re)start the hub mints a random bearer token for the
// provider, user system:wharf:provider:<name> in group
// system:wharf:providers, and hands it to the plugin in its rest config.
// Tokens live in memory only: a hub restart, or a plugin restart, revokes
// the old one. They are never logged (authn.TokenHash identifies them).
//
// The Authorizer scopes that identity: all verbs on the provider's own API
// groups in workspaces where it is enabled, read access to the
// providerbindings there, TokenReview and SubjectAccessReview there (what they reveal is
// confined to the workspace, see hub/serviceaccounts), and list/watch of its own groups across
// workspaces through /clusters/*. Everything else gets no opinion from it,
// so only RBAC grants made in a workspace (such as the edge proxy grant of
// package enablement) can add to it; its own groups in a workspace that did
// not enable it are denied outright.
//
// Threat model: a provider process is less trusted than the hub. A leaked
// provider token must not reach other providers' data, core resources, or
// workspaces that did not enable the provider; nothing a workspace user
// controls can mint or extend a provider token.
package providerauth
