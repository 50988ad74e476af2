package revdial

import "sync"

// group runs goroutines that may be started at any time until it is closed,
// and lets the closer wait for all of them. errgroup.Group cannot be used for
// this: calling Go concurrently with, or after, Wait is a WaitGroup misuse.
type group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go starts f unless the group is closed, and reports whether it did.
func (g *group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// CloseAndWait refuses new goroutines and waits for the running ones.
func (g *group) CloseAndWait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
