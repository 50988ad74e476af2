package fairqueue

import (
	"fmt"
	"sync"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

// TestConcurrentNothingLost: several workers, tenants adding far beyond
// the bound while items are handed out; with Resync adding back what is
// still pending, every item is done in the end (run with -race).
func TestConcurrentNothingLost(t *testing.T) {
	const perTenant, workers = 500, 4
	tenants := []string{"a", "b", "c"}
	var mu sync.Mutex
	pending := map[string]map[string]bool{}
	for _, tn := range tenants {
		pending[tn] = map[string]bool{}
		for i := range perTenant {
			pending[tn][fmt.Sprintf("%s%d", tn, i)] = true
		}
	}
	left := len(tenants) * perTenant
	allDone := make(chan struct{})
	var q workqueue.TypedRateLimitingInterface[string]
	q = New(Config[string]{TenantOf: tenantOfKey, MaxPerTenant: 7, Resync: func(tenant string) {
		mu.Lock()
		var items []string
		for item := range pending[tenant] {
			items = append(items, item)
		}
		mu.Unlock()
		for _, item := range items {
			q.Add(item)
		}
	}})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if pending[tenantOfKey(item)][item] {
					delete(pending[tenantOfKey(item)], item)
					if left--; left == 0 {
						close(allDone)
					}
				}
				mu.Unlock()
				q.Forget(item)
				q.Done(item)
			}
		})
	}
	for _, tn := range tenants {
		wg.Go(func() {
			for i := range perTenant {
				q.Add(fmt.Sprintf("%s%d", tn, i))
			}
		})
	}
	<-allDone // every item done; a lost one would hang here (go test -timeout)
	q.ShutDown()
	wg.Wait()
}
