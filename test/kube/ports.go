package kube

import (
	"fmt"
	"net"
	"strconv"
)

// replicaIP is the loopback address replica i binds: 127.0.0.(i+1). Distinct
// addresses with one shared port give the kubernetes Endpoints the shape a
// real multi-master cluster has (one port, N addresses).
func replicaIP(i int) net.IP {
	return net.IPv4(127, 0, 0, byte(i+1)).To4()
}

// freePort returns a TCP port that is free on every one of ips right now.
// Another process may take it before the server binds; callers retry a
// failed start with fresh ports.
func freePort(ips []net.IP) (int, error) {
	const attempts = 20
	var lastErr error
	for range attempts {
		l, err := net.Listen("tcp", net.JoinHostPort(ips[0].String(), "0"))
		if err != nil {
			return 0, fmt.Errorf("listen on %s: %w", ips[0], err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		held := []net.Listener{l}
		ok := true
		for _, ip := range ips[1:] {
			l2, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
			if err != nil {
				lastErr = err
				ok = false
				break
			}
			held = append(held, l2)
		}
		for _, h := range held {
			h.Close()
		}
		if ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free on all of %v after %d attempts: %w", ips, attempts, lastErr)
}
