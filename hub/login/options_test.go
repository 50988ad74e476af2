package login

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

func TestOptions(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(" s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		oidc       bool
		valid      bool
		tokenLogin bool
	}{
		{name: "defaults without OIDC: token login on", valid: true, tokenLogin: true},
		{name: "defaults with OIDC: token login off", oidc: true, valid: true},
		{name: "token login forced on with OIDC", args: []string{"--enable-token-login"}, oidc: true, valid: true, tokenLogin: true},
		{name: "token login forced off", args: []string{"--enable-token-login=false"}, valid: true},
		{name: "secret file", args: []string{"--oidc-client-secret-file=" + secret}, oidc: true, valid: true},
		{name: "secret and file", args: []string{"--oidc-client-secret=x", "--oidc-client-secret-file=" + secret}, oidc: true},
		{name: "secret without OIDC", args: []string{"--oidc-client-secret=x"}},
		{name: "missing secret file", args: []string{"--oidc-client-secret-file=/nonexistent"}, oidc: true},
		{name: "trusted proxies", args: []string{"--trusted-proxy-cidrs=10.0.0.0/8,fd00::/8"}, valid: true, tokenLogin: true},
		{name: "bad CIDR", args: []string{"--trusted-proxy-cidrs=10.0.0.1"}},
		{name: "zero rate", args: []string{"--login-rate-limit=0"}},
		{name: "short session", args: []string{"--session-max-age=10s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			errs := o.Validate(tc.oidc)
			if (len(errs) == 0) != tc.valid {
				t.Fatalf("Validate = %v, want valid=%v", errs, tc.valid)
			}
			if !tc.valid {
				return
			}
			if got := o.TokenLoginEnabled(tc.oidc); got != tc.tokenLogin {
				t.Errorf("TokenLoginEnabled = %v, want %v", got, tc.tokenLogin)
			}
			if s, err := o.clientSecret(); err != nil || (o.ClientSecretFile != "" && s != "s3cret") {
				t.Errorf("clientSecret = %q, %v", s, err)
			}
		})
	}
}
