package sdk

import (
	"net/http"
	"net/textproto"
	"strings"
)

// Identity headers. The hub deletes every inbound header starting with
// IdentityHeaderPrefix (any case, and any named in Connection) and sets these
// from verified data, so a backend may trust them.
const (
	IdentityHeaderPrefix = "X-Kedge-"
	HeaderUser           = "X-Kedge-User"
	// HeaderGroups carries one group per header value; values are also split
	// on commas, so group names must not contain commas.
	HeaderGroups = "X-Kedge-Groups"
	// HeaderTenant is the active workspace path, e.g. "root:acme:team".
	HeaderTenant = "X-Kedge-Tenant"
	// HeaderCluster is the active workspace's logical cluster id.
	HeaderCluster = "X-Kedge-Cluster"
	// HeaderBasePath is set on UI requests to /ui/providers/<name>.
	HeaderBasePath = "X-Kedge-Base-Path"
	// HeaderOriginalPath is set only on requests the hub routes to a
	// provider for a workspace's APIService (per-workspace aggregation):
	// the client's original path, /clusters/<workspace> included. The hub
	// strips every X-Kedge-* header a client sends, so its presence proves
	// the request came through that route, after the client workspace's
	// RBAC authorized it. A provider serving aggregated APIs must answer
	// 404 to requests without it: a direct /services/providers/<name>/apis/…
	// call skipped that authorization.
	HeaderOriginalPath = "X-Kedge-Original-Path"
)

// Identity is the verified caller of a backend request.
type Identity struct {
	User   string
	Groups []string
	// Tenant is the active workspace path.
	Tenant string
	// Cluster is the active workspace's logical cluster id.
	Cluster string
}

// IdentityFrom reads the hub-asserted identity. ok is false when the request
// carries no user, which is what a public path (Manifest.PublicPaths) gets.
func IdentityFrom(r *http.Request) (id Identity, ok bool) {
	h := r.Header
	id = Identity{
		User:    h.Get(HeaderUser),
		Tenant:  h.Get(HeaderTenant),
		Cluster: h.Get(HeaderCluster),
	}
	for _, v := range h.Values(HeaderGroups) {
		for g := range strings.SplitSeq(v, ",") {
			if g = strings.TrimSpace(g); g != "" {
				id.Groups = append(id.Groups, g)
			}
		}
	}
	return id, id.User != ""
}

// StripIdentity deletes every X-Kedge-* header in any case (and spelled
// with underscores, X_Kedge_*), and removes
// X-Kedge-* tokens from Connection. The latter matters because a proxy drops
// headers named in Connection as hop-by-hop after the hub has injected them:
// "Connection: X-Kedge-User" would otherwise erase the verified user. The hub
// and sdk/testkit both use this.
func StripIdentity(h http.Header) {
	for k := range h {
		if hasIdentityPrefix(k) {
			delete(h, k)
		}
	}
	conn := h.Values("Connection")
	if len(conn) == 0 {
		return
	}
	var keep []string
	for _, v := range conn {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			if hasIdentityPrefix(tok) {
				// Also catch a non-canonical map key the loop above missed.
				delete(h, textproto.CanonicalMIMEHeaderKey(tok))
				continue
			}
			keep = append(keep, tok)
		}
	}
	if len(keep) == 0 {
		h.Del("Connection")
		return
	}
	h["Connection"] = []string{strings.Join(keep, ", ")}
}

// SetIdentity strips all identity headers and asserts id. An empty User
// asserts nothing, which is how public paths are forwarded.
func SetIdentity(h http.Header, id Identity) {
	StripIdentity(h)
	if id.User == "" {
		return
	}
	h.Set(HeaderUser, id.User)
	for _, g := range id.Groups {
		h.Add(HeaderGroups, g)
	}
	if id.Tenant != "" {
		h.Set(HeaderTenant, id.Tenant)
	}
	if id.Cluster != "" {
		h.Set(HeaderCluster, id.Cluster)
	}
}

// hasIdentityPrefix matches the prefix in any case and with '_' for '-':
// servers that map headers to CGI-style variables (HTTP_X_KEDGE_USER) read
// "X_Kedge_User" as the identity header, so it must be stripped too.
func hasIdentityPrefix(name string) bool {
	if len(name) < len(IdentityHeaderPrefix) {
		return false
	}
	for i := range len(IdentityHeaderPrefix) {
		if foldHeaderByte(name[i]) != foldHeaderByte(IdentityHeaderPrefix[i]) {
			return false
		}
	}
	return true
}

// foldHeaderByte lower-cases ASCII letters and maps '_' to '-'.
func foldHeaderByte(c byte) byte {
	switch {
	case c == '_':
		return '-'
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return c
}
