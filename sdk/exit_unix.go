//go:build unix

package sdk

import (
	"os"
	"syscall"
)

// exitGroup kills the plugin's process group when the plugin leads it (the
// hub starts plugins with Setpgid), so children die with it. Started any
// other way, it only exits: the group is someone else's.
func exitGroup() {
	if pid := os.Getpid(); syscall.Getpgrp() == pid {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	os.Exit(1)
}
