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

// portPicker hands out TCP ports free right now on every given address and
// never the same one twice, so etcd's two ports and the apiservers' port
// cannot collide with each other. Another process may still take a port
// before the server binds it; the server then fails to start with a clear
// "address already in use" in its log.
type portPicker struct {
	used map[int]bool
}

func newPortPicker() *portPicker { return &portPicker{used: map[int]bool{}} }

// pick returns a port free on all of ips and not handed out before.
func (pp *portPicker) pick(ips []net.IP) (int, error) {
	const attempts = 50
	var lastErr error
	for range attempts {
		port, err := freePortOn(ips)
		if err != nil {
			lastErr = err
			continue
		}
		if pp.used[port] {
			lastErr = fmt.Errorf("port %d already handed out", port)
			continue
		}
		pp.used[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no port free on all of %v after %d attempts: %w", ips, attempts, lastErr)
}

// freePortOn asks the kernel for a port on ips[0], then checks the same
// port is free on the other addresses too.
func freePortOn(ips []net.IP) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ips[0].String(), "0"))
	if err != nil {
		return 0, fmt.Errorf("listen on %s: %w", ips[0], err)
	}
	held := []net.Listener{l}
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	for _, ip := range ips[1:] {
		l2, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		if err != nil {
			return 0, fmt.Errorf("port %d busy on %s: %w", port, ip, err)
		}
		held = append(held, l2)
	}
	return port, nil
}
