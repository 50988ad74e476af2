// Package kubeconfig merges a Wharf hub's cluster, user and context into a
// kubeconfig file, leaving every other entry alone.
package kubeconfig

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultPath is the first file of $KUBECONFIG, else ~/.kube/config.
func DefaultPath() string {
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env)[0]
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".kube", "config")
	}
	return filepath.Join(home, ".kube", "config")
}

// ContextName derives the cluster, user and context name from the hub URL:
// "wharf-<host>[-<port>]".
func ContextName(hubURL string) (string, error) {
	u, err := url.Parse(hubURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("hub URL %q has no host", hubURL)
	}
	// kubectl would send the credentials on every call: never over http.
	if u.Scheme != "https" {
		return "", fmt.Errorf("hub URL %q must be an https URL", hubURL)
	}
	return "wharf-" + strings.NewReplacer(":", "-", "[", "", "]", "").Replace(u.Host), nil
}

// Entry is what Merge writes under one name.
type Entry struct {
	Name    string
	Cluster *clientcmdapi.Cluster
	User    *clientcmdapi.AuthInfo
}

// Merge loads path (a missing file is an empty config), sets the cluster,
// user and context e.Name, makes it current and writes the file back
// with mode 0600.
func Merge(path string, e Entry) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		cfg, err = clientcmdapi.NewConfig(), nil
	}
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.Clusters[e.Name] = e.Cluster
	cfg.AuthInfos[e.Name] = e.User
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo = e.Name, e.Name
	cfg.Contexts[e.Name] = ctx
	cfg.CurrentContext = e.Name
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating kubeconfig directory: %w", err)
	}
	// clientcmd.WriteToFile writes with mode 0600.
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// FromBytes parses a kubeconfig the hub produced (token login) and
// returns its current context's cluster and user as an Entry named name.
func FromBytes(b []byte, name string) (Entry, error) {
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return Entry{}, fmt.Errorf("parsing the hub's kubeconfig: %w", err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		for _, c := range cfg.Contexts {
			ctx = c
			break
		}
	}
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return Entry{}, errors.New("the hub's kubeconfig has no complete context")
	}
	return Entry{Name: name, Cluster: cfg.Clusters[ctx.Cluster], User: cfg.AuthInfos[ctx.AuthInfo]}, nil
}
