package plugin

import "syscall"

// procAttr puts the plugin in its own process group, and asks the kernel to
// send it SIGTERM when the hub dies, even by kill -9. SIGTERM rather than
// SIGKILL so that package sdk can run the Stop hook and kill the plugin's
// whole group: a SIGKILLed plugin would orphan its children. (Pdeathsig
// follows the forking thread; the Go runtime does not retire unlocked
// threads, and package sdk also polls for re-parenting as a backstop.)
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// killGroup SIGKILLs the process group led by pid; ESRCH just means it is
// already gone.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
