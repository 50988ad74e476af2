package clusters

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
)

// WildcardCluster is the path segment that lists and watches across every
// workspace the identity may see.
const WildcardCluster = "*"

// Wildcard returns a copy of cfg aimed at <hub>/clusters/*: list and watch
// across workspaces. cfg's Host may be the hub's base URL or any
// /clusters/<workspace> URL of it; the workspace part is replaced.
func Wildcard(cfg *rest.Config) (*rest.Config, error) {
	return ForCluster(cfg, WildcardCluster)
}

// ForCluster returns a copy of cfg aimed at one workspace, given by path
// (root:acme) or logical cluster id (as in the Annotation), keeping cfg's
// credentials and TLS settings.
func ForCluster(cfg *rest.Config, cluster string) (*rest.Config, error) {
	if err := validCluster(cluster); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("clusters: host %q: %w", cfg.Host, err)
	}
	base, raw := trimClusters(u.Path), trimClusters(u.EscapedPath())
	// RawPath keeps "*" as it is: net/url would send %2A.
	u.Path, u.RawPath = base+"/clusters/"+cluster, raw+"/clusters/"+cluster
	out := rest.CopyConfig(cfg)
	out.Host = u.String()
	out.APIPath = ""
	return out, nil
}

// trimClusters drops a trailing slash and any /clusters/<x> suffix.
func trimClusters(p string) string {
	p = strings.TrimSuffix(p, "/")
	if i := strings.Index(p, "/clusters/"); i >= 0 {
		p = p[:i]
	}
	return p
}

// validCluster keeps a cluster name inside its path segment: an object's
// annotation is written by the hub, but a provider may also pass names it
// got from a request.
func validCluster(c string) error {
	if c == WildcardCluster {
		return nil
	}
	if c == "" {
		return fmt.Errorf("clusters: empty cluster")
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == ':') {
			return fmt.Errorf("clusters: invalid cluster %q", c)
		}
	}
	return nil
}
