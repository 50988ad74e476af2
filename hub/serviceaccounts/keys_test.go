package serviceaccounts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
)

// TestLoadKeyShared: two replicas on one etcd sign and verify with the same
// key; a key file overrides it.
func TestLoadKeyShared(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	ctx := context.Background()
	k1, err := LoadKey(ctx, etcd.Client, "/registry", "")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKey(ctx, etcd.Client, "/registry", "")
	if err != nil {
		t.Fatal(err)
	}
	if k1.ID() != k2.ID() {
		t.Fatalf("replicas got different keys: %s %s", k1.ID(), k2.ID())
	}
	tok, _, err := newTokens(t, k1, issuer).Mint(Subject{Cluster: clusterA, Namespace: "ns", Name: "bot", UID: "u"}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTokens(t, k2, issuer).Verify(tok); err != nil {
		t.Fatalf("other replica refused the token: %v", err)
	}

	pem, err := GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sa.key")
	if err := os.WriteFile(file, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	k3, err := LoadKey(ctx, etcd.Client, "/registry", file)
	if err != nil {
		t.Fatal(err)
	}
	if k3.ID() == k1.ID() {
		t.Fatal("key file ignored")
	}
	if _, err := newTokens(t, k3, issuer).Verify(tok); err == nil {
		t.Fatal("token of the shared key verified with the file key")
	}
}
