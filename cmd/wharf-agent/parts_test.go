package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// TestBundleParts: the pieces a chart mounts make the bundle
// `wharf edge create` would have printed for them.
func TestBundleParts(t *testing.T) {
	dir := t.TempDir()
	ca, tok, empty := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	for f, s := range map[string]string{ca: testCA, tok: "s3cret-token\n", empty: "\n"} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := bundleParts{hubURL: "https://hub.example.com/", caFile: ca, cluster: "abc123", edge: "lab", edgeType: "kubernetes", tokenFile: tok}
	s, err := good.encode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := protocol.DecodeBundle(s)
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.Bundle{HubURL: "https://hub.example.com", CA: testCA, Cluster: "abc123", Edge: "lab", Type: "kubernetes", Token: "s3cret-token"}
	if b != want {
		t.Fatalf("bundle %+v, want %+v", b, want)
	}

	for _, tc := range []struct {
		name   string
		mutate func(p *bundleParts)
		want   string
	}{
		{"no edge", func(p *bundleParts) { p.edge = "" }, "go together"},
		{"http", func(p *bundleParts) { p.hubURL = "http://hub" }, "must be an https URL"},
		{"bad type", func(p *bundleParts) { p.edgeType = "vm" }, "must be kubernetes or server"},
		{"missing ca", func(p *bundleParts) { p.caFile = filepath.Join(dir, "nope") }, "--hub-ca-file"},
		{"empty token", func(p *bundleParts) { p.tokenFile = empty }, "token are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.mutate(&p)
			_, err := p.encode()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the token leaked into the error: %v", err)
			}
		})
	}
}

// TestRunPartsExclusive: a bundle and its pieces are not mixed.
func TestRunPartsExclusive(t *testing.T) {
	_, err := execute(t, "run", "--state-dir", filepath.Join(t.TempDir(), "s"), "--join", "x", "--edge", "lab")
	if err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("%v, want exclusive", err)
	}
}
