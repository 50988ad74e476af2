// Package sdk is what a Wharf provider author imports. A provider is an
// ordinary net/http backend, optional static UI and a Manifest, run as a
// plugin process by the hub:
//
//	func main() { sdk.Serve(myProvider{}) }
//
// # The contract
//
// Provider author supplies:
//   - [Provider].Manifest: name, display metadata, UI (fs.FS or handler),
//     Backend handler, owned CRDs, [Replicas], EdgeProxyAccess, PublicPaths.
//   - optionally [Starter], [Stopper] and [HealthChecker].
//
// The hub guarantees:
//   - Start is called once with a [HubConfig] before any request arrives;
//     Stop after the socket stops accepting requests.
//   - Backend requests arrive with the /services/providers/<name> prefix
//     stripped, every inbound X-Kedge-* header removed and verified
//     X-Kedge-User, -Groups, -Tenant and -Cluster set ([IdentityFrom]), and
//     the caller's Authorization forwarded untouched ([CallerConfig]).
//     PublicPaths get no identity at all.
//   - UI requests arrive with /ui/providers/<name> stripped and
//     X-Kedge-Base-Path set.
//   - Only the hub can reach the plugin's socket (a 0700 directory), which is
//     the sole reason the identity headers can be trusted.
//
// The provider must:
//   - act for a user only with [CallerConfig], never with its own
//     HubConfig.RestConfig;
//   - declare ReplicasSingle if it keeps per-process state that requests
//     depend on (revdial tunnels);
//   - not import the hub, the apiserver or etcd (enforced by a test);
//   - give a controller that serves every workspace a queue where tenants
//     take turns (package sdk/fairqueue), not one FIFO queue: otherwise one
//     tenant's thousands of objects delay every other tenant's.
//
// Package sdk/clusters watches a provider's resources across workspaces
// and writes back to one; package sdk/fairqueue is the work queue for such
// a controller (round-robin between tenants, a bound per tenant). The wire protocol lives in package sdk/plugin; package sdk/testkit runs a
// provider under a minimal hub stand-in for go test.
package sdk

import "github.com/wharfhub/wharf/sdk/plugin"

// Interface guards.
var _ plugin.Server = (*server)(nil)
