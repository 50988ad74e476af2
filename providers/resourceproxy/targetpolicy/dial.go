package targetpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// DialFunc opens a connection to addr ("ip:port").
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Resolve returns host's addresses (host itself when it is a literal) if
// the policy allows every one of them, else a *RefusedError naming the
// first refused. A lookup failure is returned as is (it is not a
// refusal: the name may resolve later, and will be judged then).
func (p *Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if host == "" {
		// An empty host dials this host itself.
		return nil, &RefusedError{Host: host, Addr: netip.IPv4Unspecified(), Why: "unspecified"}
	}
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if ok, why := p.Judge(a); !ok {
			return nil, &RefusedError{Host: host, Addr: a.Unmap().WithZone(""), Why: why}
		}
	}
	return addrs, nil
}

func (p *Policy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	return addrs, nil
}

// Allows reports false when the policy refuses a peer address ("host:port"
// or a bare host): an IP literal it refuses, or a name that resolves to
// one now. A name that does not resolve now is allowed here; like every
// name it is judged again at each dial (DialContext), since what it
// resolves to changes.
func (p *Policy) Allows(ctx context.Context, hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	_, err := p.Resolve(ctx, host)
	return !IsRefused(err)
}

// DialContext resolves addr's host, refuses it unless the policy allows
// every address, then dials the addresses it judged, in order, with dial.
// The name is never resolved again between the check and the connect.
func (p *Policy) DialContext(ctx context.Context, network, addr string, dial DialFunc) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: port: %w", addr, err)
	}
	addrs, err := p.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		conn, err := dial(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
