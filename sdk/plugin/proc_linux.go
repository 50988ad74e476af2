package plugin

import "syscall"

// procAttr puts the plugin in its own process group and asks the kernel to
// SIGKILL it when the hub dies, even by kill -9, so no orphan outlives the
// hub. (Pdeathsig follows the forking thread; the Go runtime does not retire
// threads that are not locked, so in practice this is the hub's lifetime.
// Package sdk also watches for re-parenting as a second line.)
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup SIGKILLs the process group led by pid; ESRCH just means it is
// already gone.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
