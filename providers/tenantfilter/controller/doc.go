// Package controller is the tenant filter's status controller, for clusters
// without Capsule (turn it off where Capsule runs: Capsule writes these
// statuses itself). It keeps
//
//   - Tenant.status.namespaces, .size and .state current: a namespace belongs
//     to a tenant through an ownerReference to it, or the label
//     capsule.clastix.io/tenant=<t> or projectcapsule.dev/tenant=<t>;
//   - CapsuleConfiguration.status.users equal to its spec (spec.users plus the
//     deprecated userNames and userGroups), as Capsule does;
//   - every GlobalProxySettings' and ProxySetting's status.observedGeneration
//     and a Ready condition with a matching observedGeneration. Validation
//     failures (operations other than List/Get, a rule naming a kind whose
//     discovery lacks the get verb, a bad selector) are Ready=False with a
//     reason; a ProxySetting outside a tenant namespace is Ready but grants
//     nothing, and its message says so.
//
// It uses client-go informers and a rate-limited workqueue and writes a
// status only when it changes, so several proxy replicas running it agree
// without churn (a conflicting write is retried from the cache). It only
// reads its inputs and writes the status subresource; it never creates
// objects or RBAC.
package controller
