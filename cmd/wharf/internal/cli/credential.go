package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"

	"github.com/wharfhub/wharf/cmd/wharf/internal/login"
	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
)

// refreshBefore is how long before its expiry an ID token is replaced, so
// that it does not expire in flight.
const refreshBefore = 10 * time.Second

// needsRefresh reports whether e's ID token is missing or expires within
// refreshBefore of now.
func needsRefresh(e tokencache.Entry, now time.Time) bool {
	return e.IDToken == "" || !now.Add(refreshBefore).Before(e.Expiry)
}

type credentialOptions struct {
	issuer, clientID, cacheDir, oidcCAFile string
}

func newCredentialCommand() *cobra.Command {
	o := credentialOptions{}
	cmd := &cobra.Command{
		Use:   "credential",
		Short: "kubectl exec credential plugin: print a valid ID token as an ExecCredential",
		Long: `credential is run by kubectl (client.authentication.k8s.io/v1 exec plugin).
It prints the cached ID token while it is valid and refreshes it with the
cached refresh token when it is about to expire. Run "wharf login" first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.issuer, "issuer", "", "OIDC issuer URL")
	f.StringVar(&o.clientID, "client-id", "", "OIDC client id")
	f.StringVar(&o.cacheDir, "cache-dir", defaultCacheDir(), "token cache directory")
	f.StringVar(&o.oidcCAFile, "oidc-ca-file", "", "PEM CA bundle for the IdP, if not publicly trusted")
	_ = cmd.MarkFlagRequired("issuer")
	_ = cmd.MarkFlagRequired("client-id")
	return cmd
}

func (o credentialOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	cache := tokencache.Cache{Dir: o.cacheDir}
	key := tokencache.Key(o.issuer, o.clientID)
	// Concurrent kubectl processes refresh one at a time: a rotated
	// refresh token is good for one use only.
	unlock, err := cache.Lock(key)
	if err != nil {
		return err
	}
	defer unlock()
	e, err := cache.Load(key)
	if err != nil {
		return fmt.Errorf("%w; run wharf login first", err)
	}
	if needsRefresh(e, time.Now()) {
		hc, err := login.HTTPClient(o.oidcCAFile)
		if err != nil {
			return err
		}
		e, err = login.OIDC{Issuer: o.issuer, ClientID: o.clientID, HTTP: hc}.Refresh(ctx, e)
		if err != nil {
			return err
		}
		if err := cache.Store(key, e); err != nil {
			return err
		}
	}
	exp := metav1.NewTime(e.Expiry)
	out, err := json.Marshal(clientauthv1.ExecCredential{
		TypeMeta: metav1.TypeMeta{APIVersion: clientauthv1.SchemeGroupVersion.String(), Kind: "ExecCredential"},
		Status:   &clientauthv1.ExecCredentialStatus{Token: e.IDToken, ExpirationTimestamp: &exp},
	})
	if err != nil {
		return fmt.Errorf("encoding ExecCredential: %w", err)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(out))
	return err
}
