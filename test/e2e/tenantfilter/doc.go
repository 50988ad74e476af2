// Package tenantfilter holds the tenant filter's end-to-end tests: a real
// kube-apiserver v1.37.2 (test/kube) shared by the whole package, our CRDs
// and Capsule-shaped objects on it, and the real
// wharf-provider-tenant-filter binary started in standalone mode in front
// of it, reached with real clients (client-go, kubectl) as static-token
// test users.
//
// The fixture is started once in TestMain (it is the costly part); each
// test starts the proxies it needs with its own flags and creates its own
// tenants and namespaces under unique names (see uniq), so tests do not
// depend on each other's objects. harness_test.go has the helpers.
package tenantfilter
