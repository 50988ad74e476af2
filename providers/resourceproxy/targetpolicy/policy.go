package targetpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Config is the operator's setting, the targetPolicy key of the
// resource-proxy provider config (--provider-config resource-proxy=file):
//
//	targetPolicy:
//	  allowCIDRs: ["127.0.0.0/8", "::1/128"]   # e.g. kube-apiservers on loopback in tests
//	  denyCIDRs: ["10.96.0.0/12"]              # e.g. the hub cluster's service range
//
// A bare address is read as a single-address prefix.
type Config struct {
	AllowCIDRs []string `json:"allowCIDRs,omitempty"`
	DenyCIDRs  []string `json:"denyCIDRs,omitempty"`
}

// Resolver looks up a name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options are what the policy needs besides the operator's config. Zero
// values take the real host's.
type Options struct {
	// HubURLs are the hub's own URLs (the one handed to providers and the
	// provider's API endpoint); their hosts' addresses are refused.
	HubURLs []string
	// HostAddrs lists the addresses of this host's interfaces, asked at
	// every check so an address added later is covered; default
	// net.InterfaceAddrs.
	HostAddrs func() ([]netip.Addr, error)
	// Resolver resolves names; default net.DefaultResolver.
	Resolver Resolver
}

// Policy judges addresses. It is safe for concurrent use.
type Policy struct {
	allow, deny []netip.Prefix
	hub         []netip.Addr
	hostAddrs   func() ([]netip.Addr, error)
	resolver    Resolver
}

// rule is one built-in refusal.
type rule struct {
	prefix netip.Prefix
	why    string
}

// builtin are the ranges refused unless the operator allows them. Order
// matters only for the reason named: the first match is reported.
var builtin = []rule{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"}, // Linux connects 0.0.0.0 to the host itself
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},  // AWS IMDS over IPv6
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata"}, // Alibaba Cloud
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6"},
}

// New parses cfg and resolves the hub's URLs. A malformed CIDR is an
// error: the operator's intent must not be half applied.
func New(ctx context.Context, cfg Config, o Options) (*Policy, error) {
	p := &Policy{hostAddrs: o.HostAddrs, resolver: o.Resolver}
	if p.hostAddrs == nil {
		p.hostAddrs = interfaceAddrs
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	var errs []error
	var err error
	if p.allow, err = parsePrefixes(cfg.AllowCIDRs); err != nil {
		errs = append(errs, fmt.Errorf("targetPolicy.allowCIDRs: %w", err))
	}
	if p.deny, err = parsePrefixes(cfg.DenyCIDRs); err != nil {
		errs = append(errs, fmt.Errorf("targetPolicy.denyCIDRs: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, raw := range o.HubURLs {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			continue
		}
		addrs, err := p.lookup(ctx, u.Hostname())
		if err != nil {
			// The hub's name does not resolve here now: the interface
			// addresses still cover a hub on this host.
			continue
		}
		p.hub = append(p.hub, addrs...)
	}
	return p, nil
}

func parsePrefixes(ss []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%q is neither a CIDR nor an address", s))
				continue
			}
			a = a.Unmap().WithZone("")
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", s, err))
			continue
		}
		out = append(out, pf.Masked())
	}
	return out, errors.Join(errs...)
}

func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// Judge says whether ip may be dialled and, when not, why (for the
// operator's log).
func (p *Policy) Judge(ip netip.Addr) (ok bool, why string) {
	if !ip.IsValid() {
		return false, "invalid address"
	}
	ip = ip.Unmap().WithZone("")
	if containedIn(p.deny, ip) {
		return false, "targetPolicy.denyCIDRs"
	}
	if containedIn(p.allow, ip) {
		return true, ""
	}
	for _, r := range builtin {
		if r.prefix.Contains(ip) {
			return false, r.why
		}
	}
	for _, h := range p.hub {
		if h == ip {
			return false, "the hub's own address"
		}
	}
	own, err := p.hostAddrs()
	if err != nil {
		// Unknown own addresses: refuse rather than guess.
		return false, "this host's addresses are unknown: " + err.Error()
	}
	for _, h := range own {
		if h.Unmap().WithZone("") == ip {
			return false, "an address of the hub host"
		}
	}
	return true, ""
}

func containedIn(ps []netip.Prefix, ip netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// RefusedError is a host the policy refuses. Its text names the host,
// the address and the rule, for the operator's log only.
type RefusedError struct {
	Host string
	Addr netip.Addr
	Why  string
}

func (e *RefusedError) Error() string {
	if e.Host == "" {
		return fmt.Sprintf("an empty host (this host itself) is refused by the target policy (%s)", e.Why)
	}
	if e.Host == e.Addr.String() {
		return fmt.Sprintf("address %s is refused by the target policy (%s)", e.Addr, e.Why)
	}
	return fmt.Sprintf("%s resolves to %s, refused by the target policy (%s)", e.Host, e.Addr, e.Why)
}

// IsRefused reports whether err is (or wraps) a policy refusal.
func IsRefused(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}
