package edges

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// decisionCache remembers allow and deny answers for a short TTL, so a
// kubectl session does not cost the hub one review per request. Keys always
// begin with the cluster: a decision in one workspace never answers another.
type decisionCache struct {
	clock clock.PassiveClock
	ttl   time.Duration
	max   int

	mu      sync.Mutex
	entries map[string]decision
}

type decision struct {
	allowed bool
	expires time.Time
}

func newDecisionCache(c clock.PassiveClock, ttl time.Duration, max int) *decisionCache {
	return &decisionCache{clock: c, ttl: ttl, max: max, entries: map[string]decision{}}
}

func (c *decisionCache) get(key string) (allowed, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.entries[key]
	if !ok {
		return false, false
	}
	if !c.clock.Now().Before(d.expires) {
		delete(c.entries, key)
		return false, false
	}
	return d.allowed, true
}

func (c *decisionCache) put(key string, allowed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		// Full: drop what has expired, then, if a flood of distinct keys
		// (say, many tokens) still fills it, arbitrary entries. Losing an
		// entry only costs a review; it never changes an answer.
		for k, d := range c.entries {
			if !now.Before(d.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = decision{allowed: allowed, expires: now.Add(c.ttl)}
}

func (c *decisionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
