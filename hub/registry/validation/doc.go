// Package validation holds kube-apiserver's validation rules for the
// built-in kinds the hub serves (core/v1 ConfigMap, Secret, Namespace,
// ServiceAccount, rbac.authorization.k8s.io/v1 and coordination.k8s.io/v1
// Lease), with upstream's field paths and messages, so that an invalid
// object gets the same 422 Invalid Status from a workspace as from
// kube-apiserver v1.37.
//
// Upstream keeps these rules in k8s.io/kubernetes/pkg/apis/*/validation,
// which the main module must not import; the generic parts (ObjectMeta,
// qualified names, label selectors) come from k8s.io/apimachinery as
// upstream's do. The functions here are the type-specific part only: the
// registry's strategy runs the ObjectMeta checks first, then these, so the
// errors come in upstream's order. They are plain functions of the object
// (and the stored object for updates), called from the strategy's Validate
// and ValidateUpdate, which genericregistry.Store calls on every write path:
// create, update, every patch type, server-side apply and dry runs.
//
// The package also holds the two non-validation steps these rules rely on
// because kube-apiserver performs them before validating: the rbac/v1
// defaults (RegisterDefaults, applied by the codecs on decode and after
// patches) and the Lease fields dropped while the CoordinatedLeaderElection
// feature is off, as it is by default in v1.37.
package validation
