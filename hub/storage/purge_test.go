package storage_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	wstorage "github.com/wharfhub/wharf/hub/storage"
)

func TestPurgeRanges(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	ctx := context.Background()
	keys := []string{
		"/registry/core/configmaps/aaaa/ns1/a",
		"/registry/core/configmaps/aaaa/ns2/a",
		"/registry/core/configmaps/bbbb/ns1/a",
		"/registry/core/namespaces/aaaa/ns1", // cluster-scoped, named like the namespace
		"/registry/example.com/widgets/aaaa/ns1/w",
		"/registry/example.com/widgets/bbbb/ns1/w",
		"/registry/rbac.authorization.k8s.io/clusterroles/aaaa/admin",
		"/other/core/configmaps/aaaa/ns1/a", // outside the prefix
	}
	for _, k := range keys {
		if _, err := etcd.Client.Put(ctx, k, "x"); err != nil {
			t.Fatal(err)
		}
	}
	left := func() string {
		resp, err := etcd.Client.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, kv := range resp.Kvs {
			out = append(out, string(kv.Key))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}

	var seen []string
	n, err := wstorage.PurgeRanges(ctx, etcd.Client, "/registry", func(group, resource string) []string {
		seen = append(seen, group+"/"+resource)
		return []string{"aaaa/ns1/"}
	})
	if err != nil || n != 2 {
		t.Fatalf("namespace purge = %d, %v", n, err)
	}
	if got := strings.Join(seen, ","); got != "core/configmaps,core/namespaces,example.com/widgets,rbac.authorization.k8s.io/clusterroles" {
		t.Errorf("resources visited = %s", got)
	}
	want := []string{
		"/other/core/configmaps/aaaa/ns1/a",
		"/registry/core/configmaps/aaaa/ns2/a",
		"/registry/core/configmaps/bbbb/ns1/a",
		"/registry/core/namespaces/aaaa/ns1",
		"/registry/example.com/widgets/bbbb/ns1/w",
		"/registry/rbac.authorization.k8s.io/clusterroles/aaaa/admin",
	}
	if got := left(); got != strings.Join(want, "\n") {
		t.Fatalf("after namespace purge:\n%s", got)
	}

	n, err = wstorage.PurgeRanges(ctx, etcd.Client, "/registry/", func(_, _ string) []string { return []string{"aaaa/"} })
	if err != nil || n != 3 {
		t.Fatalf("cluster purge = %d, %v", n, err)
	}
	want = []string{"/other/core/configmaps/aaaa/ns1/a", "/registry/core/configmaps/bbbb/ns1/a", "/registry/example.com/widgets/bbbb/ns1/w"}
	if got := left(); got != strings.Join(want, "\n") {
		t.Fatalf("after cluster purge:\n%s", got)
	}
}
