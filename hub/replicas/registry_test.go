package replicas

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
)

// Two replicas register in a real etcd, find each other, and a stopped one
// disappears at once (its lease is revoked); both agree on one secret.
func TestRegistryAndSecret(t *testing.T) {
	client := testserver.RunEtcd(t, nil).Client
	ctx := t.Context()
	a := NewRegistry(client, "/registry", Replica{Name: "hub-a", InternalURL: "https://127.0.0.1:1", CABundle: []byte("ca-a")})
	b := NewRegistry(client, "/registry", Replica{Name: "hub-b", InternalURL: "https://127.0.0.1:2", CABundle: []byte("ca-b")})
	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() { a.Run(actx); close(aDone) }()
	go b.Run(ctx)

	deadline := time.Now().Add(30 * time.Second)
	var got Replica
	for {
		var err error
		if got, err = b.Lookup(ctx, "hub-a"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub-a never registered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.InternalURL != "https://127.0.0.1:1" || string(got.CABundle) != "ca-a" {
		t.Fatalf("lookup = %+v", got)
	}
	stopA()
	<-aDone
	// A fresh registry has no cache: the revoked entry is gone.
	fresh := NewRegistry(client, "/registry", Replica{Name: "hub-c"})
	if _, err := fresh.Lookup(ctx, "hub-a"); !errors.Is(err, ErrUnknownReplica) {
		t.Fatalf("stopped replica still registered: %v", err)
	}

	s1, err := LoadOrCreateSecret(ctx, client, "/registry")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := LoadOrCreateSecret(ctx, client, "/registry/")
	if err != nil {
		t.Fatal(err)
	}
	if len(s1) != minSecret || !bytes.Equal(s1, s2) {
		t.Fatalf("secrets differ or are short: %d %d", len(s1), len(s2))
	}
}

func TestNames(t *testing.T) {
	a, b := DefaultName("/data/one"), DefaultName("/data/two")
	if a == b || a != DefaultName("/data/one") {
		t.Fatalf("default names %q %q", a, b)
	}
	for _, n := range []string{a, b} {
		if err := ValidateName(n); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []string{"", "Hub_A", "a/b"} {
		if ValidateName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
