package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// hubFlags select the hub context and workspace the edge commands act in:
// the current kubeconfig context (as kubectl resolves it), --context, and
// -w/--workspace, which swaps the /clusters/<workspace> path of the
// context's server.
type hubFlags struct {
	kubeconfig, context, workspace string
}

// add registers --kubeconfig, --context and -w/--workspace on fs.
func (f *hubFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: kubectl's rules, $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context of the hub (default: the current context)")
	fs.StringVarP(&f.workspace, "workspace", "w", "", "workspace path, e.g. root:acme (default: the context's workspace)")
}

// hubConn is a resolved hub context: the rest config acting as the caller
// in the chosen workspace, plus the raw kubeconfig pieces the CLI copies
// into join bundles and edge kubeconfigs.
type hubConn struct {
	flags   hubFlags
	context string       // the resolved kubeconfig context name
	rest    *rest.Config // Host is <hub>/clusters/<workspace>
	cluster *clientcmdapi.Cluster
	user    *clientcmdapi.AuthInfo
}

// connect resolves f into a hubConn.
func (f hubFlags) connect() (*hubConn, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	name := f.context
	if name == "" {
		name = raw.CurrentContext
	}
	kctx := raw.Contexts[name]
	if kctx == nil {
		if name == "" {
			return nil, errors.New("no current kubeconfig context; run \"wharf login <hub-url>\" first or pass --context")
		}
		return nil, fmt.Errorf("kubeconfig context %q not found", name)
	}
	cluster, user := raw.Clusters[kctx.Cluster], raw.AuthInfos[kctx.AuthInfo]
	if cluster == nil {
		return nil, fmt.Errorf("kubeconfig context %q names no known cluster", name)
	}
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	if f.workspace != "" {
		if rc.Host, err = withWorkspace(rc.Host, f.workspace); err != nil {
			return nil, err
		}
	}
	return &hubConn{flags: f, context: name, rest: rc, cluster: cluster, user: user}, nil
}

// withWorkspace returns server with its path set to /clusters/<workspace>,
// keeping any prefix before /clusters/ (a hub behind a path-routing proxy).
func withWorkspace(server, workspace string) (string, error) {
	if strings.ContainsAny(workspace, "/?#% ") {
		return "", fmt.Errorf("invalid workspace %q", workspace)
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("kubeconfig server %q is not a URL", server)
	}
	prefix := u.Path
	if i := strings.Index(prefix, "/clusters/"); i >= 0 {
		prefix = prefix[:i]
	}
	u.Path = strings.TrimSuffix(prefix, "/") + "/clusters/" + workspace
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

// hubRoot is scheme://host of the hub (the join bundle's HubURL and the
// base of the provider backend), taken from the context's server.
func (c *hubConn) hubRoot() (string, error) {
	u, err := url.Parse(c.rest.Host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("kubeconfig server %q is not a URL", c.rest.Host)
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("kubeconfig server %q must be an https URL", c.rest.Host)
	}
	return u.Scheme + "://" + u.Host, nil
}

// rootConfig is the caller's rest config with Host set to the hub root,
// for the provider backend under /services/providers/.
func (c *hubConn) rootConfig() (*rest.Config, error) {
	root, err := c.hubRoot()
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(c.rest)
	rc.Host, rc.APIPath = root, ""
	return rc, nil
}

// caPEM is the hub CA of the context (inline data or file). A join bundle
// and an edge kubeconfig must pin one, so a context without a CA is an
// error rather than a silent fallback to the system roots.
func (c *hubConn) caPEM() ([]byte, error) {
	if len(c.cluster.CertificateAuthorityData) > 0 {
		return c.cluster.CertificateAuthorityData, nil
	}
	if c.cluster.CertificateAuthority != "" {
		b, err := os.ReadFile(c.cluster.CertificateAuthority)
		if err != nil {
			return nil, fmt.Errorf("reading the hub CA: %w", err)
		}
		return b, nil
	}
	return nil, errors.New("the kubeconfig context has no certificate-authority for the hub; log in with --certificate-authority so the CA can be pinned")
}

// dynamic is a dynamic client in the chosen workspace.
func (c *hubConn) dynamic() (dynamic.Interface, error) {
	d, err := dynamic.NewForConfig(c.rest)
	if err != nil {
		return nil, fmt.Errorf("building the hub client: %w", err)
	}
	return d, nil
}
