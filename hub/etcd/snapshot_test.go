package etcd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotRoundTrip: keys saved from a running embedded member come
// back in a member StartEmbedded starts on the restored dir, with the
// revision bumped as asked, and nothing written after the save.
func TestSnapshotRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	a, err := StartEmbedded(ctx, filepath.Join(base, "a", "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	url, err := EmbeddedClientURL(filepath.Join(base, "a"))
	if err != nil || url != a.ClientURL {
		t.Fatalf("EmbeddedClientURL: %q %v, want %q", url, err, a.ClientURL)
	}
	ca := client(t, url)
	for i := 0; i < 10; i++ {
		if _, err := ca.Put(ctx, fmt.Sprintf("/registry/k%d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(base, "s.db")
	info, err := SaveSnapshot(ctx, clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second}, file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Keys < 10 || info.Revision < 11 {
		t.Fatalf("snapshot info %+v", info)
	}
	if _, err := ca.Put(ctx, "/registry/late", "x"); err != nil {
		t.Fatal(err)
	}
	ca.Close()
	a.Close()

	if _, err := EmbeddedClientURL(filepath.Join(base, "none")); err == nil {
		t.Fatal("EmbeddedClientURL found a socket in an empty dir")
	}
	const bump = 1000
	if err := Restore(file, filepath.Join(base, "b"), RestoreOptions{RevisionBump: bump}); err != nil {
		t.Fatal(err)
	}
	if err := Restore(file, filepath.Join(base, "b"), RestoreOptions{}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("second restore: %v", err)
	}
	b, err := StartEmbedded(ctx, filepath.Join(base, "b", "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb := client(t, b.ClientURL)
	defer cb.Close()
	resp, err := cb.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 10 {
		t.Fatalf("restored %d keys, want the 10 saved", len(resp.Kvs))
	}
	if resp.Header.Revision < info.Revision+bump {
		t.Fatalf("restored revision %d, want at least %d", resp.Header.Revision, info.Revision+bump)
	}
	// Old revisions are compacted: a watch from before the restore is told.
	if _, err := cb.Get(ctx, "/registry/k1", clientv3.WithRev(info.Revision)); err == nil {
		t.Fatal("a revision from before the restore is still readable")
	}
	if _, err := cb.Put(ctx, "/registry/new", "y"); err != nil {
		t.Fatalf("restored member is not writable: %v", err)
	}
}

func client(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
