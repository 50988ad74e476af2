package fairness

import (
	"context"
	"regexp"
	"strings"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// API documents (discovery and OpenAPI) are answered from documents the
// hub holds in memory, yet each answer costs CPU in proportion to its
// size: the hub filters discovery per workspace (hub/apiview), gzips
// what it sends, and TLS encrypts it. OpenAPI v2 is megabytes. The second
// outside review (B-C) burned both cores of a 2-core hub with 40 GETs at
// once of /openapi/v2, /openapi/v3/api/v1 and /apis, inside a tenant's
// 40-seat share, and the hub's lease renewals missed their deadline. So
// a GET of a document is weighed as a list is: by the size of the
// caller's last answer of that path in that workspace (Estimator), its
// tenant's whole share while that is not known.

// apiVersion is how a Kubernetes API version is spelled (v1, v2beta1):
// /api/<version> is discovery, /api/<anything else> is not (the hub's
// own /api/whoami and /api/usage).
var apiVersion = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// isDocument reports a GET of an API document: /openapi/v2,
// /openapi/v3[/...], and discovery (/api, /api/<version>, /apis,
// /apis/<group>[/<version>]).
func isDocument(info *request.RequestInfo) bool {
	if info.IsResourceRequest || info.Verb != "get" {
		return false
	}
	p := info.Path
	switch {
	case p == "/openapi/v2", p == "/openapi/v3", strings.HasPrefix(p, "/openapi/v3/"):
		return true
	case p == "/api", p == "/apis", strings.HasPrefix(p, "/apis/"):
		return true
	case strings.HasPrefix(p, "/api/"):
		return apiVersion.MatchString(strings.TrimPrefix(p, "/api/"))
	}
	return false
}

// documentKey files a document's size under its viewer, workspace and
// path, as sizeKey files a list's (see there why the viewer).
func documentKey(ctx context.Context, info *request.RequestInfo) sizeKey {
	t, _ := cluster.TargetFrom(ctx)
	return sizeKey{viewer: viewerOf(ctx), cluster: t.Raw, path: info.Path}
}
