// Package procnet reads which TCP ports a process listens on, from /proc,
// so tests can prove that a process opens no listener it should not.
package procnet

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpListen is the st column of /proc/net/tcp for a listening socket.
const tcpListen = "0A"

// ListeningTCPPorts returns the local ports of the TCP (v4 and v6) sockets
// in LISTEN state that process pid holds open. /proc/<pid>/net/tcp lists
// every socket of the network namespace, so only those whose inode is one
// of the process's file descriptors count.
func ListeningTCPPorts(pid int) ([]int, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var ports []int
	for _, f := range []string{"tcp", "tcp6"} {
		p, err := listening(filepath.Join("/proc", strconv.Itoa(pid), "net", f), inodes)
		if err != nil {
			return nil, err
		}
		ports = append(ports, p...)
	}
	return ports, nil
}

func socketInodes(pid int) (map[string]bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading fds of %d: %w", pid, err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out, nil
}

func listening(file string, inodes map[string]bool) ([]int, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	defer f.Close()
	var ports []int
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != tcpListen || !inodes[fields[9]] {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			return nil, fmt.Errorf("%s: bad local address %q", file, fields[1])
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("%s: bad port %q: %w", file, hexPort, err)
		}
		ports = append(ports, int(port))
	}
	return ports, sc.Err()
}
