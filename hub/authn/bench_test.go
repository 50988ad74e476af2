package authn_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/serviceaccounts"
	"github.com/wharfhub/wharf/hub/serviceaccounts/satest"
	"github.com/wharfhub/wharf/test/idp"
)

// BenchmarkAuthenticate is the per-request cost of each token type through
// the whole union (static → service account → OIDC), side by side:
//   - static: a map lookup;
//   - serviceaccount: signature check plus a consistent read of the
//     ServiceAccount from a real embedded etcd (the revocation check);
//   - oidc: with a warm key cache (discovery and JWKS fetched once before
//     the timer starts), after the service-account slot declined it.
//
// It logs each row's cost relative to the admin static token.
func BenchmarkAuthenticate(b *testing.B) {
	p := idp.Start(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	store := satest.NewStore(b)
	const id = cluster.ID("benchbenchbench0")
	sa := satest.Create(b, store, id, "default", "bot")
	key, err := serviceaccounts.GenerateKeyPEM()
	if err != nil {
		b.Fatal(err)
	}
	k, err := serviceaccounts.ParseKeyPEM(key)
	if err != nil {
		b.Fatal(err)
	}
	tokens, err := serviceaccounts.NewTokens(k, "https://hub.example.com", []string{"https://hub.example.com"})
	if err != nil {
		b.Fatal(err)
	}
	saAuth := serviceaccounts.NewAuthenticator(tokens)
	saAuth.SetStore(store)
	saToken, _, err := tokens.Mint(serviceaccounts.Subject{Cluster: id, Namespace: "default", Name: "bot", UID: sa.UID}, nil, time.Hour)
	if err != nil {
		b.Fatal(err)
	}

	a := newUnion(ctx, b, p, saAuth)
	rows := []struct{ name, token string }{
		{"static/admin", adminToken},
		{"static/token-file", "file-token"},
		{"serviceaccount/valid", saToken},
		{"oidc/valid", p.Sign(b, p.Claims(clientID, nil))},
		{"rejected/garbage", "garbage"},
	}
	perOp := map[string]time.Duration{}
	for _, bc := range rows {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/api", nil)
			for b.Loop() {
				r.Header.Set("Authorization", "Bearer "+bc.token)
				if _, ok, _ := a.AuthenticateRequest(r); ok != (bc.name != "rejected/garbage") {
					b.Fatalf("authenticated=%v", ok)
				}
			}
			perOp[bc.name] = b.Elapsed() / time.Duration(b.N)
		})
	}
	if base := perOp["static/admin"]; base > 0 {
		var out []string
		for _, bc := range rows {
			out = append(out, fmt.Sprintf("%s %v (%.0fx)", bc.name, perOp[bc.name], float64(perOp[bc.name])/float64(base)))
		}
		b.Logf("per request, relative to static/admin: %s", strings.Join(out, ", "))
	}
}

// newUnion is the hub's union with the admin token, a token file, the
// service-account slot and OIDC, ready (discovery done).
func newUnion(ctx context.Context, b *testing.B, p *idp.IdP, sa *serviceaccounts.Authenticator) *authn.Authenticator {
	b.Helper()
	o := authn.NewOptions()
	o.OIDC.IssuerURL, o.OIDC.ClientID, o.OIDC.CAFile = p.URL, clientID, p.CAFile
	o.ServiceAccounts = sa
	static, err := authn.StaticTokens(adminToken, adminInfo, writeTokenFile(b))
	if err != nil {
		b.Fatal(err)
	}
	a, err := o.Authenticator(ctx, static, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return a.HealthCheck() == nil, nil
	}); err != nil {
		b.Fatalf("oidc never became ready: %v", a.HealthCheck())
	}
	return a
}

// writeTokenFile writes the token file newAuth uses.
func writeTokenFile(b *testing.B) string {
	f := filepath.Join(b.TempDir(), "tokens.csv")
	if err := os.WriteFile(f, []byte("file-token,bob,bob-uid,\"team-a,team-b\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return f
}
