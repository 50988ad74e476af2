// Package kube is the end-to-end test fixture for a real Kubernetes control
// plane: one etcd and one or more kube-apiserver processes on loopback,
// started from real upstream binaries (v1.37.2) with generated keys, a
// shared serving CA, static tokens and RBAC authorization.
//
// The fixture shells out to binaries instead of linking k8s.io/kubernetes, so
// the main module never depends on it. Binaries come from, in order:
// KUBE_APISERVER_BIN / ETCD_BIN / KUBECTL in the environment, else the
// hash-keyed cache filled by test/tools/build.sh (make kube-tools), which is
// built on demand: a test never skips because a binary is missing.
//
// No controllers run. Namespaces get no default ServiceAccount and pods stay
// Pending; use Cluster.CreateNamespace (which also creates the "default"
// ServiceAccount) or Options.APIServerArgs to change admission.
//
// Because kube-apiserver runs with --endpoint-reconciler-type=none (it exits
// with "cannot use public IP" otherwise), the fixture itself keeps the
// default/kubernetes EndpointSlice listing every running replica. Replica i
// listens on 127.0.0.(i+1), all on the same port, the shape a real
// multi-master cluster has. The slice's addressType is FQDN with IP-literal
// addresses, because API validation rejects loopback IPs in IPv4 slices and
// in v1 Endpoints; v1 Endpoints (deprecated) is therefore not written.
//
// A typical test:
//
//	c := kube.Start(t, kube.Options{Users: []kube.User{{Name: "alice"}}})
//	c.CreateNamespace(t, "team-a")
//	c.ApplyYAML(t, crdAndInstances)
//	cs, _ := kubernetes.NewForConfig(c.ImpersonateConfig("bob", "devs"))
package kube
