package core

import "k8s.io/apimachinery/pkg/runtime/schema"

// FailedGroups exposes, to the external tests, the group versions the last
// discovery refresh could not read.
func FailedGroups(c *Core) []schema.GroupVersion { return c.disco.failedGroups() }

// RefreshDiscovery forces a discovery refresh (tests only).
func RefreshDiscovery(c *Core) error { return c.disco.refresh() }
