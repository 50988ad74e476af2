package cli

import (
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestWithWorkspace(t *testing.T) {
	for _, tc := range []struct{ server, ws, want string }{
		{"https://hub:9443/clusters/root", "root:acme", "https://hub:9443/clusters/root:acme"},
		{"https://hub:9443/clusters/root:a:b/", "abcdefghij012345", "https://hub:9443/clusters/abcdefghij012345"},
		{"https://hub:9443", "root", "https://hub:9443/clusters/root"},
		{"https://edge.example/wharf/clusters/root", "root:x", "https://edge.example/wharf/clusters/root:x"},
	} {
		got, err := withWorkspace(tc.server, tc.ws)
		if err != nil || got != tc.want {
			t.Errorf("withWorkspace(%q, %q) = %q, %v; want %q", tc.server, tc.ws, got, err, tc.want)
		}
	}
	for _, bad := range []string{"root/../x", "a?b", "a b", "a%2f"} {
		if _, err := withWorkspace("https://hub/clusters/root", bad); err == nil {
			t.Errorf("workspace %q accepted", bad)
		}
	}
}

// TestConnectFlags: --context picks a context other than the current one,
// -w rewrites its server path, and the hub root drops the path.
func TestConnectFlags(t *testing.T) {
	path := writeKubeconfig(t, nil)
	c, err := hubFlags{kubeconfig: path}.connect()
	if err != nil {
		t.Fatal(err)
	}
	if c.rest.Host != "https://hub.example:9443/clusters/root:acme" || c.context != "hub" {
		t.Fatalf("host %q context %q", c.rest.Host, c.context)
	}
	c, err = hubFlags{kubeconfig: path, workspace: "root:other"}.connect()
	if err != nil {
		t.Fatal(err)
	}
	if c.rest.Host != "https://hub.example:9443/clusters/root:other" {
		t.Fatalf("-w: host %q", c.rest.Host)
	}
	root, err := c.rootConfig()
	if err != nil || root.Host != "https://hub.example:9443" {
		t.Fatalf("root %v %v", root, err)
	}
	if _, err := (hubFlags{kubeconfig: path, context: "missing"}).connect(); err == nil {
		t.Fatal("a missing --context was accepted")
	}
	plain := writeKubeconfig(t, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "http://hub.example/clusters/root" })
	c, err = hubFlags{kubeconfig: plain}.connect()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.hubRoot(); err == nil {
		t.Fatal("an http hub was accepted for a join bundle")
	}
}
