// Package catalog serves the providers.wharf.dev API and keeps it in step
// with the plugin host.
//
//   - REST storage for CatalogEntry (root workspace only, written by the
//     hub) and ProviderBinding (any workspace, written by users with RBAC
//     permission; the provider must be in the catalog).
//   - Syncer: reflects plugins.Host status into CatalogEntries. Several
//     hub replicas may share etcd, so each replica read-modify-writes only
//     its own element of status.replicas (optimistic concurrency, retry on
//     conflict) and recomputes the aggregate conditions from all elements;
//     elements with a stale heartbeat are dropped.
//   - CRD installation: a provider's CustomResourceDefinitions are created
//     or updated once its manifest is known. CRDs are hub-wide; whether a
//     workspace may use them is decided by ProviderBindings (package
//     enablement).
//
// # Threat model
//
// The attacker is any person, hence admin of their home workspace: they
// may write CatalogEntries and ProviderBindings there through every verb
// and path the API serves. The catalog is hub-wide state (package
// enablement turns it into which API groups answer in every workspace),
// so it must never derive from what a tenant can write.
//
//   - CatalogEntries are written only in root's logical cluster, the one
//     the request was resolved to. The rule is a genericregistry.Store
//     BeginCreate/BeginUpdate hook (admit.go), not a Create override: the
//     store runs BeginCreate on POST and on every create through Update
//     (server-side apply, PUT), before dry-run returns, so no path and no
//     addressing form (path, id, no prefix) skips it. Every refusal is the
//     same 403. Deletes stay allowed anywhere, to clean up.
//   - No entry may claim a reserved group (ReservedGroup: the hub's own,
//     the core group and unqualified names, k8s.io, kubernetes.io and
//     their subdomains), nor a shipped provider's group (edges.wharf.dev,
//     proxy.wharf.dev) unless it is that provider's entry (MayOwn),
//     whoever writes it, root admins and the syncer included (422). The
//     shipped groups stay reserved on a hub that does not load those
//     providers: the hub gives them meaning (the edge-proxy grant).
//   - A ProviderBinding is admitted only for a provider in root's catalog,
//     checked in the same BeginCreate hook, so server-side apply and dry
//     run are refused alike (422); spec.provider is immutable.
//   - Status of both kinds is the hub's: it is cleared on create and the
//     status subresources are not served; the syncer and the enablement
//     controller write it in-process (EntriesStatus, BindingsStatus).
//     Clients cannot forge a provider's readiness or a binding's Bound.
//   - A binding's cleanup finalizer (which makes disabling purge the
//     provider's data and grants) is kept on every client update, before
//     and after deletion was asked for; only the enablement controller,
//     through BindingsCleanup (never served), drops it once done.
//   - Which workspace an object belongs to is what the storage decorator
//     recorded (wharf.dev/cluster, overwritten on every write), never a
//     client field.
package catalog
