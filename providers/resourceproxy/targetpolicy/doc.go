// Package targetpolicy decides which network addresses the resource-proxy
// provider may dial for an external target: the server of the target's
// kubeconfig and every peer its default/kubernetes EndpointSlice lists.
//
// # Threat model
//
// The attacker is admin of some workspace. She writes the kubeconfig
// Secret an external target is read from, so she picks the server URL; and
// when she runs the target cluster (or a fake API server) she also picks
// the peer addresses the provider's peer watch publishes. The provider
// process runs on the hub's host, so without a policy it dials, on her
// behalf, whatever she names: the hub's own listeners and the embedded
// etcd on loopback, the cloud metadata service at 169.254.169.254, other
// services of the hub host. Even when the dial fails, an open port and a
// closed one answer differently (a TLS error against a refused
// connection, and their timing), which is a port scanner.
//
// What this package holds against that:
//
//   - By default it refuses loopback, link-local (169.254.0.0/16 with the
//     metadata address, fe80::/10), unspecified (0.0.0.0/8, ::),
//     multicast and broadcast, IPv4-compatible IPv6 (::/96), the cloud
//     metadata addresses outside link-local (fd00:ec2::254,
//     100.100.100.200), every address of the host's own interfaces, and
//     the addresses of the hub's own URLs. IPv4-mapped IPv6 addresses
//     (::ffff:127.0.0.1) are judged as the IPv4 address they carry.
//   - The operator widens it with allowCIDRs (tests and development
//     set-ups whose targets are kube-apiservers on loopback) and narrows it
//     with denyCIDRs (pod and service ranges, an external etcd); denyCIDRs
//     wins over allowCIDRs, which wins over the defaults.
//   - Names are resolved by the policy, every resolved address is judged,
//     and the dial goes to the judged address, never to the name again: a
//     name that resolves to loopback, at validation or later (DNS
//     rebinding), is refused, and there is no second lookup between check
//     and connect. A name with one refused address is refused as a whole.
//   - A refusal happens before any packet is sent, so it is identical
//     whether the port is open, closed or filtered. Its error names the
//     address and the rule for the operator's log; callers must not put
//     that detail in answers a workspace admin reads.
package targetpolicy
