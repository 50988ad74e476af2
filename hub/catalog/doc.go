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
package catalog
