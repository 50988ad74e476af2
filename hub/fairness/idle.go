package fairness

import "container/list"

// maxIdleQueueSets bounds how many queue sets of tenants with nothing
// queued or running the Controller keeps for reuse. Building a queue set
// (upstream's Complete and setConfiguration) cost about 2% of the hub's
// CPU when every request of a tenant with nothing else in flight built
// one and dropped it at its end (issue 24: limits must cost under 5% when
// nobody misbehaves). An idle queue set is small (one empty queue); the cap
// keeps memory bounded however many tenants there are (a person can make
// only one home, but many people can each send a request): in flight
// plus this many.
const maxIdleQueueSets = 1024

// idleQueues is an LRU of the tenant queue sets with no request queued or
// running, oldest at the back. The Controller's mutex guards it.
type idleQueues struct {
	max   int // 0: maxIdleQueueSets
	order list.List
}

// add records tq (with no request left) as idle, the most recently used,
// and forgets from tenants the least recently used idle entries beyond
// the cap.
func (q *idleQueues) add(key tenantKind, tq *tenantQueue, tenants map[tenantKind]*tenantQueue) {
	tq.key = key
	tq.idle = q.order.PushFront(tq)
	limit := q.max
	if limit <= 0 {
		limit = maxIdleQueueSets
	}
	for q.order.Len() > limit {
		old := q.order.Remove(q.order.Back()).(*tenantQueue)
		old.idle = nil
		delete(tenants, old.key)
	}
}

// take marks tq as in use again if it was idle.
func (q *idleQueues) take(tq *tenantQueue) {
	if tq.idle != nil {
		q.order.Remove(tq.idle)
		tq.idle = nil
	}
}

// len is the number of idle queue sets kept.
func (q *idleQueues) len() int { return q.order.Len() }
