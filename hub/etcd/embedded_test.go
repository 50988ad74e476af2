package etcd

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/test/procnet"
)

// The member must be reachable through its socket only: no TCP listener
// (client, peer or metrics) in this process, and the socket's directory
// closed to other users. A restart on the same dir keeps the data.
func TestEmbeddedListensOnlyOnPrivateSocket(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.MkdirAll(dir, 0o755); err != nil { // too open: the start must fix it
		t.Fatal(err)
	}
	put := func(e *Embedded, key, val string) string {
		t.Helper()
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if val != "" {
			if _, err := c.Put(ctx, key, val); err != nil {
				t.Fatalf("put through %s: %v", e.ClientURL, err)
			}
		}
		resp, err := c.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get through %s: %v %v", e.ClientURL, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}

	e, err := StartEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	put(e, "/k", "v")
	ports, err := procnet.ListeningTCPPorts(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 0 {
		t.Errorf("embedded etcd listens on TCP ports %v, want none", ports)
	}
	if filepath.Dir(e.SocketPath) != dir {
		t.Errorf("socket %s outside %s", e.SocketPath, dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("socket dir mode %v, want 0700", st.Mode().Perm())
	}
	e.Close()

	e, err = StartEmbedded(ctx, dir)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer e.Close()
	if got := put(e, "/k", ""); got != "v" {
		t.Errorf("after restart /k = %q, want v", got)
	}
}
