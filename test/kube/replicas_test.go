package kube_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/kube"
)

// TestReplicasKeepEndpointSliceCurrent starts two apiservers on one etcd
// and checks that the kubernetes EndpointSlice lists exactly the running
// ones through a stop and a restart, and that both serve the same data.
func TestReplicasKeepEndpointSliceCurrent(t *testing.T) {
	c := kube.Start(t, kube.Options{Replicas: 2})
	ctx := testContext(t)

	if got := c.RunningReplicas(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("running replicas = %v, want [0 1]", got)
	}
	if c.ReplicaHost(0) == c.ReplicaHost(1) {
		t.Fatalf("replicas share address %s", c.ReplicaHost(0))
	}
	wantHosts := func(idx ...int) []string {
		var hosts []string
		for _, i := range idx {
			hosts = append(hosts, c.ReplicaHost(i))
		}
		return hosts
	}
	r0 := clientset(t, c, 0)
	if got := sliceHosts(ctx, t, r0); !slices.Equal(got, wantHosts(0, 1)) {
		t.Fatalf("endpoints after start = %v, want %v", got, wantHosts(0, 1))
	}

	// One etcd: what replica 0 writes, replica 1 reads.
	c.CreateNamespace(t, "shared")
	if _, err := clientset(t, c, 1).CoreV1().Namespaces().Get(ctx, "shared", metav1.GetOptions{}); err != nil {
		t.Fatalf("replica 1 reading namespace written through replica 0: %v", err)
	}

	if err := c.StopReplica(1); err != nil {
		t.Fatal(err)
	}
	if got := c.RunningReplicas(); !slices.Equal(got, []int{0}) {
		t.Fatalf("running replicas after stop = %v, want [0]", got)
	}
	if got := sliceHosts(ctx, t, r0); !slices.Equal(got, wantHosts(0)) {
		t.Fatalf("endpoints after stopping replica 1 = %v, want %v", got, wantHosts(0))
	}
	if err := c.Ready(ctx, 1); err == nil {
		t.Fatal("stopped replica 1 still answers /readyz")
	}

	if err := c.StartReplica(1); err != nil {
		t.Fatal(err)
	}
	if got := sliceHosts(ctx, t, clientset(t, c, 1)); !slices.Equal(got, wantHosts(0, 1)) {
		t.Fatalf("endpoints after restarting replica 1 = %v, want %v", got, wantHosts(0, 1))
	}
}

func clientset(t *testing.T, c *kube.Cluster, i int) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.ReplicaConfig(i))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// sliceHosts reads the kubernetes EndpointSlices the way a peer-discovery
// client would (by service-name label) and returns "address:port" of every
// ready endpoint, sorted.
func sliceHosts(ctx context.Context, t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	list, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kubernetes",
	})
	if err != nil {
		t.Fatalf("list kubernetes endpointslices: %v", err)
	}
	var hosts []string
	for _, s := range list.Items {
		for _, p := range s.Ports {
			if p.Port == nil {
				t.Fatalf("endpointslice %s has a port without a number", s.Name)
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					continue
				}
				for _, a := range e.Addresses {
					hosts = append(hosts, net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	slices.Sort(hosts)
	return hosts
}

// TestKillEtcdAndRecover is the fault path: with etcd killed the apiserver
// reports not ready; with etcd restarted on its old data it recovers and
// the data written before the crash is still there.
func TestKillEtcdAndRecover(t *testing.T) {
	c := kube.Start(t, kube.Options{})
	ctx := testContext(t)
	c.CreateNamespace(t, "before-crash")

	if err := c.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	err := poll(ctx, func() error {
		if err := c.Ready(ctx, 0); err == nil {
			return fmt.Errorf("replica 0 still ready with etcd killed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if err := c.StartEtcd(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, 0); err != nil {
		t.Fatalf("replica 0 after etcd restart: %v", err)
	}
	if _, err := c.Clientset(t).CoreV1().Namespaces().Get(ctx, "before-crash", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace written before the crash: %v", err)
	}
}
