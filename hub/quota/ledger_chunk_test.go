package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/etcd"
)

func manyClusters(n int) []cluster.ID {
	out := make([]cluster.ID, n)
	for i := range out {
		out[i] = cluster.ID(fmt.Sprintf("c%015d", i))
	}
	return out
}

// storedRecords reads every usage record as etcd holds it: the tenant's,
// and the sum and count of the clusters'.
func storedRecords(t *testing.T, c *clientv3.Client, l *Ledger, tenant string) (ten, sum Usage, n int) {
	t.Helper()
	resp, err := c.Get(context.Background(), l.Prefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		var r record
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			t.Fatal(err)
		}
		switch k := string(kv.Key); {
		case k == l.tenantKey(tenant):
			ten = r.Usage
		case strings.HasPrefix(k, l.clusters):
			sum, n = sum.Add(r.Usage), n+1
		}
	}
	return ten, sum, n
}

// A tenant with more workspaces than one etcd transaction may hold
// (--max-txn-ops, 128) is counted like a small one: reservations in 300
// workspaces at once, through two replicas, and then writes admitted from
// grants in all of them, flushed together, commit; the tenant's record is
// the sum of its clusters'; a purge of them all empties it (review 5,
// #12: the 128th workspace's records made every write of the tenant 500).
func TestLedgerTenantWithManyWorkspaces(t *testing.T) {
	ctx := context.Background()
	c := startEtcd(t)
	ledgers := []*Ledger{NewLedger(etcd.NewWriter(c), "/registry"), NewLedger(etcd.NewWriter(c), "/registry")}
	const n = 300
	ids := manyClusters(n)
	tenant := "root:users:many"
	ten := Limits{Objects: 10 * n, Workspaces: n}
	write := func(i int, d Usage) error {
		return ledgers[i%2].apply(&change{cluster: ids[i], tenant: tenant, delta: d, enforce: true, ws: Limits{Objects: 100}, ten: ten})
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := write(i, Usage{Objects: 1, Bytes: 10, Workspaces: 1}); err != nil {
				errs <- fmt.Errorf("workspace %d: %w", i, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Then a write in every workspace, one at a time: most are admitted
	// from grants, and one flush writes them all.
	for i := range ids {
		if err := write(i, Usage{Objects: 1, Bytes: 10}); err != nil {
			t.Fatalf("second write in workspace %d: %v", i, err)
		}
	}
	for _, l := range ledgers {
		l.Flush()
	}
	got, sum, records := storedRecords(t, c, ledgers[0], tenant)
	want := Usage{Objects: 2 * n, Bytes: 20 * n, Workspaces: n}
	if got != want || sum != want || records != n {
		t.Fatalf("tenant record %+v, clusters' sum %+v over %d records; want %+v over %d", got, sum, records, want, n)
	}
	// The tenant ceiling still holds exactly at its edge.
	for i := 0; i < 5; i++ {
		err := write(i, Usage{Workspaces: 1})
		var ex *Exceeded
		if !errors.As(err, &ex) {
			t.Fatalf("workspace %d past the tenant's %d: %v, want exceeded quota", n+i+1, n, err)
		}
	}
	// Releases everywhere, through the other replica, then a purge of all.
	for i := range ids {
		if err := ledgers[(i+1)%2].apply(&change{cluster: ids[i], tenant: tenant, delta: Usage{Objects: -1, Bytes: -10}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range ledgers {
		l.Flush()
	}
	if got, sum, _ = storedRecords(t, c, ledgers[0], tenant); got != sum || got.Objects != n {
		t.Fatalf("after releases: tenant %+v, clusters %+v", got, sum)
	}
	all := map[cluster.ID]string{}
	for _, id := range ids {
		all[id] = tenant
	}
	if err := ledgers[1].Purge(ctx, all); err != nil {
		t.Fatal(err)
	}
	if got, _, records = storedRecords(t, c, ledgers[0], tenant); !got.IsZero() || records != 0 {
		t.Fatalf("after the purge: tenant %+v, %d cluster records left", got, records)
	}
	for _, l := range ledgers {
		l.Flush()
	}
	if _, tu, err := ledgers[0].Get(ctx, ids[0], tenant); err != nil || !tu.IsZero() {
		t.Fatalf("after the purge, read back: %+v, %v", tu, err)
	}
}

// Commits split into many small transactions (a chunk of 3 clusters)
// still never pass a ceiling across replicas, and leave the tenant's
// record the exact sum of its clusters'.
func TestLedgerChunkedCommitsAcrossReplicas(t *testing.T) {
	c := startEtcd(t)
	var ledgers []*Ledger
	for i := 0; i < 3; i++ {
		l := NewLedger(etcd.NewWriter(c), "/registry")
		l.chunk = 3
		ledgers = append(ledgers, l)
	}
	ids := manyClusters(20)
	tenant := "root:chunked"
	const want = 37
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for i := 0; i < 160; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := ledgers[i%3].apply(&change{cluster: ids[i%len(ids)], tenant: tenant, delta: Usage{Objects: 1, Bytes: 100}, enforce: true, ten: Limits{Objects: want}})
			var ex *Exceeded
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case !errors.As(err, &ex):
				t.Errorf("reserve %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	for _, l := range ledgers {
		l.Flush()
	}
	if ok != want {
		t.Fatalf("admitted %d, want %d", ok, want)
	}
	got, sum, _ := storedRecords(t, c, ledgers[0], tenant)
	if got != sum || got.Objects != want {
		t.Fatalf("tenant record %+v, clusters' sum %+v; want %d objects in both", got, sum, want)
	}
	for i := 0; i < want; i++ {
		if err := ledgers[i%3].apply(&change{cluster: ids[i%len(ids)], tenant: tenant, delta: Usage{Objects: -1, Bytes: -100}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range ledgers {
		l.Flush()
	}
	if got, sum, _ = storedRecords(t, c, ledgers[0], tenant); !got.IsZero() || !sum.IsZero() {
		t.Fatalf("after releases: tenant %+v, clusters %+v", got, sum)
	}
}
