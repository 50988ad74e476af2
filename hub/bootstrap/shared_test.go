package bootstrap_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/bootstrap"
	wetcd "github.com/wharfhub/wharf/hub/etcd"
)

// TestSharedSecretRace: concurrent first users, as several hub replicas
// starting together, all end up with one value, and later calls keep it.
func TestSharedSecretRace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := wetcd.StartEmbedded(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	gen := func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	}
	const n = 16
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := bootstrap.SharedSecret(ctx, c, "/registry", "test", gen)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for i := range got {
		if len(got[i]) != 32 || !bytes.Equal(got[i], got[0]) {
			t.Fatalf("replica %d got %x, replica 0 got %x", i, got[i], got[0])
		}
	}
	again, err := bootstrap.SharedSecret(ctx, c, "/registry", "test", gen)
	if err != nil || !bytes.Equal(again, got[0]) {
		t.Fatalf("second call: %x, %v", again, err)
	}
	other, err := bootstrap.SharedSecret(ctx, c, "/registry", "other", gen)
	if err != nil || bytes.Equal(other, got[0]) {
		t.Fatalf("a different name must get its own secret: %x, %v", other, err)
	}
}
