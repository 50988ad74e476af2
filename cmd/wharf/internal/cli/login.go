package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wharfhub/wharf/cmd/wharf/internal/kubeconfig"
	"github.com/wharfhub/wharf/cmd/wharf/internal/login"
	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
)

type loginOptions struct {
	kubeconfig, hubCAFile, oidcCAFile string
	issuer, clientID                  string
	cacheDir, workspace               string
	device, noBrowser, tokenFromStdin bool
	token                             string
	timeout                           time.Duration
}

func newLoginCommand() *cobra.Command {
	o := loginOptions{}
	cmd := &cobra.Command{
		Use:   "login <hub-url>",
		Short: "Log in to a hub and write a kubeconfig context for it",
		Long: `login asks the hub (/.well-known/wharf) which OpenID Connect provider and
client to use, logs in through the browser (authorization code + PKCE with a
loopback redirect) or, with --device, the device code flow, caches the tokens
and writes a kubeconfig context whose user runs "wharf credential" to obtain
and refresh ID tokens. With --token it exchanges a static hub token for a
kubeconfig instead (dev mode).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			return o.run(ctx, cmd.ErrOrStderr(), cmd.InOrStdin(), strings.TrimSuffix(args[0], "/"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", kubeconfig.DefaultPath(), "kubeconfig file to write")
	f.StringVar(&o.hubCAFile, "certificate-authority", "", "PEM CA bundle for the hub, written into the kubeconfig")
	f.StringVar(&o.oidcCAFile, "oidc-ca-file", "", "PEM CA bundle for the IdP, if not publicly trusted")
	f.StringVar(&o.issuer, "issuer", "", "OIDC issuer URL (default: from the hub's /.well-known/wharf)")
	f.StringVar(&o.clientID, "client-id", "", "OIDC client id (default: from the hub's /.well-known/wharf)")
	f.StringVar(&o.cacheDir, "cache-dir", defaultCacheDir(), "token cache directory")
	f.StringVar(&o.workspace, "workspace", "", "workspace path for the context (default: your home workspace, else root)")
	f.BoolVar(&o.device, "device", false, "use the device code flow instead of a browser redirect")
	f.BoolVar(&o.noBrowser, "no-browser", false, "print the login URL without opening a browser")
	f.StringVar(&o.token, "token", "", "dev mode: exchange this static hub token for a kubeconfig (prefer --token-stdin)")
	f.BoolVar(&o.tokenFromStdin, "token-stdin", false, "dev mode: read the static hub token from stdin")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on the login after this long")
	return cmd
}

func (o loginOptions) run(ctx context.Context, out io.Writer, in io.Reader, hubURL string) error {
	name, err := kubeconfig.ContextName(hubURL)
	if err != nil {
		return err
	}
	hc, err := login.HTTPClient(o.hubCAFile)
	if err != nil {
		return err
	}
	if o.tokenFromStdin {
		b, err := io.ReadAll(io.LimitReader(in, 64<<10))
		if err != nil {
			return fmt.Errorf("reading the token from stdin: %w", err)
		}
		o.token = strings.TrimSpace(string(b))
	}
	var entry kubeconfig.Entry
	if o.token != "" {
		entry, err = o.tokenLogin(ctx, hc, hubURL, name)
	} else {
		entry, err = o.oidcLogin(ctx, out, hc, hubURL, name)
	}
	if err != nil {
		return err
	}
	if err := kubeconfig.Merge(o.kubeconfig, entry); err != nil {
		return err
	}
	fmt.Fprintf(out, "Logged in. Context %q (server %s) written to %s and made current.\n", name, entry.Cluster.Server, o.kubeconfig)
	return nil
}

func (o loginOptions) tokenLogin(ctx context.Context, hc *http.Client, hubURL, name string) (kubeconfig.Entry, error) {
	b, err := login.TokenLogin(ctx, hc, hubURL, o.token)
	if err != nil {
		return kubeconfig.Entry{}, err
	}
	e, err := kubeconfig.FromBytes(b, name)
	if err != nil {
		return e, err
	}
	if len(e.Cluster.CertificateAuthorityData) == 0 && e.Cluster.CertificateAuthority == "" && o.hubCAFile != "" {
		if e.Cluster.CertificateAuthorityData, err = os.ReadFile(o.hubCAFile); err != nil {
			return e, fmt.Errorf("reading the hub CA: %w", err)
		}
	}
	return e, nil
}

// oidcLogin logs in at the IdP, caches the tokens and returns a context
// whose user is the "wharf credential" exec plugin.
func (o loginOptions) oidcLogin(ctx context.Context, out io.Writer, hc *http.Client, hubURL, name string) (kubeconfig.Entry, error) {
	var scopes []string
	if o.issuer == "" || o.clientID == "" {
		d, err := login.Discover(ctx, hc, hubURL)
		if err != nil {
			return kubeconfig.Entry{}, err
		}
		if d.OIDC == nil {
			if d.TokenLogin {
				return kubeconfig.Entry{}, errors.New("the hub has no OIDC provider configured; log in with --token-stdin")
			}
			return kubeconfig.Entry{}, errors.New("the hub offers no way to log in")
		}
		if o.issuer == "" {
			o.issuer = d.OIDC.IssuerURL
		}
		if o.clientID == "" {
			o.clientID = d.OIDC.ClientID
		}
		scopes = d.OIDC.Scopes
	}
	idpHTTP, err := login.HTTPClient(o.oidcCAFile)
	if err != nil {
		return kubeconfig.Entry{}, err
	}
	flow := login.OIDC{Issuer: o.issuer, ClientID: o.clientID, Scopes: scopes, HTTP: idpHTTP}
	var tok tokencache.Entry
	if o.device {
		tok, err = flow.Device(ctx, out)
	} else {
		var open func(string) error
		if !o.noBrowser {
			open = func(u string) error { return openBrowser(ctx, u) }
		}
		tok, err = flow.Loopback(ctx, out, open)
	}
	if err != nil {
		return kubeconfig.Entry{}, err
	}
	if err := (tokencache.Cache{Dir: o.cacheDir}).Store(tokencache.Key(o.issuer, o.clientID), tok); err != nil {
		return kubeconfig.Entry{}, err
	}
	ws := o.workspace
	if ws == "" {
		if ws, err = login.HomeWorkspace(ctx, hc, hubURL, tok.IDToken); err != nil {
			fmt.Fprintf(out, "Could not look up your home workspace (%v); using root.\n", err)
		}
		if ws == "" {
			ws = "root"
		}
	}
	return o.execEntry(hubURL, name, ws)
}

// execEntry is the kubeconfig context for an OIDC login: the user runs
// this binary's credential command with absolute paths, so kubectl finds
// it from any working directory.
func (o loginOptions) execEntry(hubURL, name, ws string) (kubeconfig.Entry, error) {
	exe, err := os.Executable()
	if err != nil {
		return kubeconfig.Entry{}, fmt.Errorf("locating the wharf binary: %w", err)
	}
	cacheDir, err := filepath.Abs(o.cacheDir)
	if err != nil {
		return kubeconfig.Entry{}, fmt.Errorf("resolving the cache directory: %w", err)
	}
	args := []string{"credential", "--issuer=" + o.issuer, "--client-id=" + o.clientID, "--cache-dir=" + cacheDir}
	if o.oidcCAFile != "" {
		ca, err := filepath.Abs(o.oidcCAFile)
		if err != nil {
			return kubeconfig.Entry{}, fmt.Errorf("resolving the IdP CA file: %w", err)
		}
		args = append(args, "--oidc-ca-file="+ca)
	}
	cluster := clientcmdapi.NewCluster()
	cluster.Server = hubURL + "/clusters/" + ws
	if o.hubCAFile != "" {
		if cluster.CertificateAuthorityData, err = os.ReadFile(o.hubCAFile); err != nil {
			return kubeconfig.Entry{}, fmt.Errorf("reading the hub CA: %w", err)
		}
	}
	user := clientcmdapi.NewAuthInfo()
	user.Exec = &clientcmdapi.ExecConfig{
		APIVersion:      "client.authentication.k8s.io/v1",
		Command:         exe,
		Args:            args,
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}
	return kubeconfig.Entry{Name: name, Cluster: cluster, User: user}, nil
}
