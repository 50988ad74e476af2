package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Run drains q with the given number of workers until ctx is done, calling
// reconcile for each key. A key whose reconcile fails is retried with the
// queue's rate limiting; one that succeeds is forgotten. Run returns when
// ctx is done and shuts the queue down.
func Run[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], workers int, name string,
	reconcile func(context.Context, T) error) {
	defer q.ShutDown()
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for processNext(ctx, q, name, reconcile) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func processNext[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], name string,
	reconcile func(context.Context, T) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := reconcile(ctx, key); err != nil {
		klog.ErrorS(err, "Reconcile failed; retrying", "controller", name, "key", key)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}
