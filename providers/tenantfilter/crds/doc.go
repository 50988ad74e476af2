// Package crds ships the tenant filter's CustomResourceDefinitions for
// clusters without Capsule: Tenant and CapsuleConfiguration
// (capsule.clastix.io/v1beta2), GlobalProxySettings and ProxySetting
// (capsule.clastix.io/v1beta1), written by us and compatible with Capsule's
// and capsule-proxy's schemas: an object valid for Capsule is valid here.
// Fields the filter reads are typed; deep parts it does not read are kept
// with x-kubernetes-preserve-unknown-fields.
//
// All returns the manifests (for `wharf-provider-tenant-filter crds |
// kubectl apply -f -`); Apply installs them with a client and waits until
// each is Established. Apply never overwrites a CRD it did not write
// (Capsule's own, which serve more versions behind a conversion webhook):
// ours carry the label app.kubernetes.io/managed-by=wharf-tenant-filter.
package crds
