package tenantfilter

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"empty", "", ""},
		{"full", `
clusters:
- {name: prod, kubeconfig: /k/prod}
- {name: lab, kubeconfig: /k/lab}
capsuleConfigurationName: cfg
requireCapsuleUser: false
ignoredUserGroup: [admins]
ignoredUsername: [root]
impersonationGroupRegexp: ^team-
ignoredImpersonationGroup: [x]
enableReflector: true
disableCaching: false
featureGates: {ProxyClusterScoped: true}
allowedPaths: [/api]
clientConnectionQps: 5
clientConnectionBurst: 9
rolebindingsResyncPeriod: 1h
`, ""},
		{"unknown key", "clusterz: []", "unknown field"},
		{"bad name", "clusters: [{name: Prod_1, kubeconfig: /k}]", "clusters[0].name"},
		{"duplicate", "clusters: [{name: a, kubeconfig: /k}, {name: a, kubeconfig: /k}]", "duplicate"},
		{"no kubeconfig", "clusters: [{name: a}]", "kubeconfig: required"},
		{"unknown gate", "featureGates: {Bogus: true}", "unknown gate"},
		{"bad duration", "rolebindingsResyncPeriod: soon", "rolebindingsResyncPeriod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	o := c.CoreOptions()
	if !o.RequireCapsuleUser || o.CapsuleConfigurationName != "default" || o.ClientQPS != 20 || o.ClientBurst != 30 ||
		o.RoleBindingsResyncPeriod != 10*time.Hour || strings.Join(o.AllowedPaths, ",") != "/api,/apis,/version" {
		t.Fatalf("defaults differ from the standalone flags: %+v", o)
	}
	f := false
	c.RequireCapsuleUser = &f
	if c.CoreOptions().RequireCapsuleUser {
		t.Fatal("requireCapsuleUser: false ignored")
	}
}
