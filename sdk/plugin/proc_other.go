//go:build !unix

package plugin

import (
	"os"
	"syscall"
)

// Without process groups the hub can only kill the plugin itself.
func procAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
