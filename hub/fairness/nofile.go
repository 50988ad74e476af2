//go:build unix

package fairness

import "syscall"

// OpenFileLimit returns the process's soft RLIMIT_NOFILE, or 0 if unknown.
// Go (since 1.19) raises the soft limit to the hard limit when package os
// is initialized, so this is already the most the hub may open.
func OpenFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return uint64(l.Cur)
}
