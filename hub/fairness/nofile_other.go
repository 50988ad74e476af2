//go:build !unix

package fairness

// OpenFileLimit returns 0: unknown on this platform.
func OpenFileLimit() uint64 { return 0 }
