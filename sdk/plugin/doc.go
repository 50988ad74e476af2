// Package plugin is the wire protocol between the Wharf hub and a provider
// plugin process, with both halves: [Serve] for the plugin (wrapped by
// package sdk, which provider authors use) and [Launch]/[Client] for the hub.
//
// # Contract
//
//   - Transport: hashicorp/go-plugin, gRPC only, [Handshake] cookie,
//     protocol version [ProtocolVersion]. The plugin map has one entry,
//     [PluginName].
//   - Control plane: the Provider gRPC service in pluginpb/provider.proto:
//     Describe, Start (configure and start serving), Health, Stop.
//   - Data plane: plain HTTP on the unix socket the hub names in
//     [Config.SocketPath], inside a directory only the hub's user can enter
//     (mode 0700). The plugin serves the UI under [UIPrefix] and the backend
//     under [BackendPrefix]; both prefixes are stripped before the provider's
//     handlers see the request. No HTTP is re-encoded over gRPC, so streaming,
//     SSE and websockets work unchanged.
//   - Trust: the plugin trusts X-Kedge-* identity headers only because the
//     socket is reachable by the hub alone; the hub strips and re-asserts them.
//   - Lifetime: the hub starts the plugin in its own process group and kills
//     the whole group on [Client.Kill]. On Linux the plugin gets SIGTERM as
//     its parent-death signal; package sdk answers that, and re-parenting,
//     by running the Stop hook and killing its own group, so nothing outlives
//     a hub that was killed with -9.
//
// This package must not import the hub, the apiserver or etcd: it is linked
// into every provider binary. revdial/imports_test.go enforces that.
package plugin

import goplugin "github.com/hashicorp/go-plugin"

// Interface guards: the go-plugin adapter implements gRPC plugin, and the
// client/server halves satisfy the protocol's service interfaces.
var (
	_ goplugin.GRPCPlugin = (*grpcPlugin)(nil)
	_ Server              = (*grpcClient)(nil)
)
