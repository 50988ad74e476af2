package cli

import (
	"errors"
	"fmt"
	"net/url"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// previousName is the kubeconfig context (and cluster) that remembers the
// workspace before the last `wharf ws use`, as kcp's `kubectl ws` keeps
// "workspace.kcp.io/previous". It is an ordinary context, so
// `kubectl --context wharf-previous` works too.
const previousName = "wharf-previous"

// wsKubeconfig is the kubeconfig the ws commands rewrite, loaded with
// kubectl's rules so that a change lands in the file that defines the
// entry, even with several files in $KUBECONFIG.
type wsKubeconfig struct {
	rules   *clientcmd.ClientConfigLoadingRules
	cfg     *clientcmdapi.Config
	context string
}

// loadKubeconfig reads the kubeconfig f names and resolves its context.
func loadKubeconfig(f hubFlags) (*wsKubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := rules.GetStartingConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	name := f.context
	if name == "" {
		name = cfg.CurrentContext
	}
	k := &wsKubeconfig{rules: rules, cfg: cfg, context: name}
	if _, err := k.cluster(); err != nil {
		return nil, err
	}
	return k, nil
}

// cluster is the cluster entry of the context.
func (k *wsKubeconfig) cluster() (*clientcmdapi.Cluster, error) {
	kctx := k.cfg.Contexts[k.context]
	if kctx == nil {
		if k.context == "" {
			return nil, errors.New("no current kubeconfig context; run \"wharf login <hub-url>\" first or pass --context")
		}
		return nil, fmt.Errorf("kubeconfig context %q not found", k.context)
	}
	if k.context == previousName {
		return nil, fmt.Errorf("the %s context only remembers the previous workspace; switch back to your hub's context first", previousName)
	}
	c := k.cfg.Clusters[kctx.Cluster]
	if c == nil {
		return nil, fmt.Errorf("kubeconfig context %q names no known cluster", k.context)
	}
	return c, nil
}

// previousServer is the server the previous context remembers, if it is
// for this context's hub and user. A previous workspace of another hub or
// user is not followed: switching there would silently change who the
// caller is.
func (k *wsKubeconfig) previousServer() (string, error) {
	cur, err := k.cluster()
	if err != nil {
		return "", err
	}
	pctx := k.cfg.Contexts[previousName]
	if pctx == nil || k.cfg.Clusters[pctx.Cluster] == nil {
		return "", errors.New("no previous workspace")
	}
	prev := k.cfg.Clusters[pctx.Cluster].Server
	if pctx.AuthInfo != k.cfg.Contexts[k.context].AuthInfo || origin(prev) != origin(cur.Server) {
		return "", fmt.Errorf("the previous workspace was used with another hub or user (context %q remembers it)", previousName)
	}
	return prev, nil
}

// setServer points the context's cluster at server and remembers the old
// server in the previous context, then writes the kubeconfig back.
func (k *wsKubeconfig) setServer(server string) error {
	cur, err := k.cluster()
	if err != nil {
		return err
	}
	kctx := k.cfg.Contexts[k.context]
	if cur.Server != server {
		prev := cur.DeepCopy()
		pctx := kctx.DeepCopy()
		pctx.Cluster = previousName
		k.cfg.Clusters[previousName] = prev
		k.cfg.Contexts[previousName] = pctx
		cur.Server = server
	}
	if err := clientcmd.ModifyConfig(k.rules, *k.cfg, true); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// origin is scheme://host of a server URL, "" if it is not one.
func origin(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
