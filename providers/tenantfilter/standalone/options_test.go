package standalone

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("standalone", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// TestFlagInventory pins capsule-proxy's flag names and defaults: a
// drop-in replacement must accept the same command line.
func TestFlagInventory(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("standalone", pflag.ContinueOnError)
	o.AddFlags(fs)
	want := map[string]string{
		"listening-port":              "9001",
		"enable-ssl":                  "true",
		"ssl-cert-path":               "",
		"ssl-key-path":                "",
		"auth-preferred-types":        "[TLSCertificate,BearerToken]",
		"capsule-configuration-name":  "default",
		"require-capsule-user":        "true",
		"ignored-user-group":          "[]",
		"ignored-username":            "[]",
		"impersonation-group-regexp":  "",
		"ignored-impersonation-group": "[]",
		"enable-reflector":            "false",
		"disable-caching":             "false",
		"allowed-paths":               "[/api,/apis,/version]",
		"client-connection-qps":       "20",
		"client-connection-burst":     "30",
		"trusted-proxy-cidrs":         "[]",
		"xfcc-header-name":            "X-Forwarded-Client-Cert",
		"rolebindings-resync-period":  "10h0m0s",
		"metrics-addr":                ":8080",
		"feature-gates":               "",
		"kubeconfig":                  "",
		"client-ca":                   "",
		"status-controller":           "true",
	}
	for name, def := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s missing", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default %q, want %q", name, f.DefValue, def)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"all capsule-proxy flags", []string{"--listening-port=9443", "--enable-ssl=true", "--auth-preferred-types=BearerToken,XForwardedClientCert",
			"--capsule-configuration-name=cfg", "--require-capsule-user=false", "--ignored-user-group=a,b", "--ignored-username=u",
			"--impersonation-group-regexp=^team-", "--ignored-impersonation-group=x", "--enable-reflector", "--disable-caching",
			"--feature-gates=ProxyClusterScoped=true,ProxyAllNamespaced=true", "--allowed-paths=/api,/version", "--client-connection-qps=5",
			"--client-connection-burst=7", "--trusted-proxy-cidrs=10.0.0.0/8,::1/128", "--xfcc-header-name=X-Client-Cert",
			"--rolebindings-resync-period=1h", "--metrics-addr=127.0.0.1:0", "--status-controller=false"}, ""},
		{"unknown flag", []string{"--no-such-flag"}, "unknown flag"},
		{"unknown gate", []string{"--feature-gates=Bogus=true"}, "unrecognized feature gate"},
		{"bad auth type", []string{"--auth-preferred-types=Basic"}, "unknown authentication type"},
		{"auth type is case-sensitive", []string{"--auth-preferred-types=bearertoken"}, "unknown authentication type"},
		{"cert without TLS", []string{"--enable-ssl=false", "--ssl-cert-path=a", "--ssl-key-path=b"}, "cannot be used with --enable-ssl=false"},
		{"cert without key", []string{"--ssl-cert-path=a"}, "go together"},
		{"bad CIDR", []string{"--trusted-proxy-cidrs=10.0.0.0/33"}, "trusted proxy CIDR"},
		{"bad regexp", []string{"--impersonation-group-regexp=("}, "impersonation-group-regexp"},
		{"relative allowed path", []string{"--allowed-paths=api"}, "must start with /"},
		{"port zero", []string{"--listening-port=0"}, "listening-port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCoreOptions(t *testing.T) {
	o, err := parse(t, "--feature-gates=ProxyClusterScoped=true", "--ignored-username=root", "--require-capsule-user=false",
		"--client-connection-qps=5", "--client-connection-burst=7")
	if err != nil {
		t.Fatal(err)
	}
	c := o.CoreOptions()
	if !c.Gate("ProxyClusterScoped") || c.Gate("ProxyAllNamespaced") || c.Gate("SkipImpersonationReview") {
		t.Errorf("gates %v", c.FeatureGates)
	}
	if c.RequireCapsuleUser || len(c.IgnoredUsernames) != 1 || c.ClientQPS != 5 || c.ClientBurst != 7 || c.CapsuleConfigurationName != "default" {
		t.Errorf("core options %+v", c)
	}
}

// TestSelfSignedByDefault: like capsule-proxy, HTTPS without
// --ssl-cert-path serves a generated certificate; client certificates are
// requested, not required (a token must still work with a foreign one).
func TestSelfSignedByDefault(t *testing.T) {
	o := NewOptions()
	cfg, err := o.servingTLS()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 1 || len(cfg.Certificates[0].Certificate) == 0 {
		t.Fatal("no self-signed certificate")
	}
	if cfg.ClientAuth != tls.RequestClientCert {
		t.Fatalf("ClientAuth %v, want RequestClientCert", cfg.ClientAuth)
	}
	o.SSLCertPath, o.SSLKeyPath = "/nonexistent.crt", "/nonexistent.key"
	if _, err := o.servingTLS(); err == nil {
		t.Fatal("a missing --ssl-cert-path must fail")
	}
}
