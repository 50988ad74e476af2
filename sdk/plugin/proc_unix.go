//go:build unix && !linux

package plugin

import "syscall"

func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup SIGKILLs the process group led by pid; ESRCH just means it is
// already gone.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
