package benchkit

import (
	"context"
	"fmt"
	"sync"
)

// Pool runs fn(ctx, i) for i in [0,n) on workers goroutines. It stops
// handing out work at the first error or when ctx ends, waits for every
// worker and returns that first error (or ctx's error if ctx ended first).
func Pool(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil && n > 0 {
		return fmt.Errorf("pool: %w", err)
	}
	return nil
}
