package sdk

// # The provider UI contract
//
// A provider with a UI (Manifest.UI or UIHandler) is a page of the portal.
// The portal shell, not the provider, owns the document: the provider
// contributes one custom element, loaded and mounted like this.
//
//  1. Entry point. The shell imports the ES module UIEntry from the
//     provider's UI, i.e. /ui/providers/<name>/main.js (served by the UI
//     proxy from the provider's Manifest.UI root). It may import further
//     modules and assets relative to itself; a path whose last segment
//     has a "." is an asset, anything else under /ui/providers/<name>/ is a
//     portal route.
//  2. Element. The module defines the custom element UIElementName(name),
//     "wharf-provider-<name>", within UIDefineTimeoutSeconds of being imported,
//     or the shell shows the user an error saying it did not define itself.
//  3. Properties. Before the element is connected the shell sets:
//     - context: a frozen object {user, groups, workspace (the path, e.g.
//     "root:acme"), cluster (its logical cluster id), basePath
//     ("/ui/providers/<name>"), subRoute ("/" or the rest of the URL after
//     basePath, e.g. "/edges/e1"), search, hash}. When the user follows a
//     sub-route of the same provider in the same workspace, the shell sets
//     a new context on the same element. Switching workspace mounts a
//     new element.
//     - api: {fetch(path, init), watch(path, {signal, onSync, onState})}.
//     fetch is window.fetch for this hub's paths, with the session cookie
//     and, on /services/providers/<name>/, X-Wharf-Workspace set to the
//     context's workspace. State-changing requests (not GET, HEAD,
//     OPTIONS) carry the CSRF header only to the provider's own backend
//     and to the API groups the provider owns (Manifest CRDs) under
//     /clusters/<workspace>/apis/; others are refused before they leave
//     the page. watch lists and then watches a Kubernetes collection,
//     calling onSync(items) with the current items after every event.
//  4. Events. The element may dispatch UINavigateEvent ("wharf-navigate",
//     detail {path: "/sub/route"}, bubbling) to move to a sub-route; the
//     shell updates the URL (bookmarkable, survives a hard refresh) and the
//     element's context.
//  5. Helper. Modules may import UIHelperPath (/ui/shell/provider.js):
//     defineProvider(name, class) defines the element once; navigate(el,
//     path) dispatches the event; sheet(css) builds a constructable
//     stylesheet; ProviderElement is a base class that calls
//     render(context, api, signal) when context or api change, with a
//     signal that aborts on removal or workspace change.
//
// The page's Content-Security-Policy allows scripts and styles from the
// hub's origin only: no inline <script>, <style> or on*= attributes (use
// adoptedStyleSheets, e.g. sheet()). The element never receives a token:
// the session cookie is HttpOnly and the CSRF token stays in the shell.
// A provider script that calls fetch itself still sends the cookie, so it
// can read as the user, but its state-changing requests are refused
// (403) for want of the CSRF header (see portal/doc.go). Shell CSS custom
// properties (--text, --muted, --line, --panel, --accent, --ok, --bad,
// light and dark) cross the shadow boundary, so an element can match the
// portal's look.
const (
	// UIEntry is the module the shell imports from a provider's UI.
	UIEntry = "main.js"
	// UIElementPrefix starts every provider element's name.
	UIElementPrefix = "wharf-provider-"
	// UINavigateEvent asks the shell to move to a provider sub-route.
	UINavigateEvent = "wharf-navigate"
	// UIHelperPath is the shell's helper module for provider UIs.
	UIHelperPath = "/ui/shell/provider.js"
	// UIDefineTimeoutSeconds is how long the element has to be defined.
	UIDefineTimeoutSeconds = 5
)

// UIElementName is the custom element a provider's UI must define.
func UIElementName(provider string) string { return UIElementPrefix + provider }
