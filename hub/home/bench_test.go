package home

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/wharfhub/wharf/hub/workspaces"
)

// BenchmarkEnsureExisting is what every authenticated request of a person
// pays once their home exists: no etcd, no storage, no authorizer.
func BenchmarkEnsureExisting(b *testing.B) {
	etcd := testserver.RunEtcd(b, nil)
	ctx := context.Background()
	x := workspaces.NewIndex(etcd.Client, "/registry")
	u := &user.DefaultInfo{Name: "alice@example.com", Groups: []string{"devs", user.AllAuthenticated}}
	p := PathOf(u.Name)
	if _, err := x.Allocate(ctx, p); err != nil {
		b.Fatal(err)
	}
	m := NewManager(x, nil)
	m.owners.Store(p, u.Name)
	b.ReportAllocs()
	for b.Loop() {
		if got, _, err := m.Ensure(ctx, u); err != nil || got != string(p) {
			b.Fatalf("Ensure = %q, %v", got, err)
		}
	}
}

func BenchmarkLabel(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Label("alice@example.com")
	}
}
