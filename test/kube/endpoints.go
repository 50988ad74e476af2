package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The names upstream's endpoint reconciler uses for the apiserver's own
// service, which the fixture reproduces because the reconciler is off.
// Consumers find the slice by the label kubernetes.io/service-name=kubernetes.
const (
	endpointsNamespace = metav1.NamespaceDefault
	endpointsName      = "kubernetes"
	endpointsPortName  = "https"
	// EndpointSliceManagedBy marks the slice as the fixture's, the way
	// upstream marks its own with its controller's name.
	EndpointSliceManagedBy = "wharf-test-fixture"
)

// syncEndpoints is syncEndpointsLocked under c.mu.
func (c *Cluster) syncEndpoints(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncEndpointsLocked(ctx)
}

// syncEndpointsLocked writes the default/kubernetes EndpointSlice so that it
// lists exactly the running replicas, through the first running one. It
// retries until ctx ends because right after start the default namespace may
// not exist yet and writes can conflict.
//
// Only the EndpointSlice is kept, with addressType FQDN: API validation
// rejects loopback addresses in v1 Endpoints and in IPv4/IPv6 slices ("may
// not be in the loopback range"), which is also why the upstream reconciler
// refuses 127.0.0.1. An FQDN address may be an IP literal such as
// "127.0.0.2", which every dialer accepts as is. v1 Endpoints is deprecated
// since v1.33 and is not written.
func (c *Cluster) syncEndpointsLocked(ctx context.Context) error {
	idx := c.running()
	if len(idx) == 0 {
		return fmt.Errorf("sync endpoints: no replica running")
	}
	cs, err := kubernetes.NewForConfig(c.ReplicaConfig(idx[0]))
	if err != nil {
		return fmt.Errorf("sync endpoints: clientset: %w", err)
	}
	ips := make([]string, len(idx))
	for k, i := range idx {
		ips[k] = c.replicas[i].ip.String()
	}
	port := int32(c.replicas[0].port)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		err := writeEndpointSlice(ctx, cs, ips, port)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err // keep the cause, not the deadline it ran into
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sync kubernetes endpointslice to %v: %w (last error: %w)", ips, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func writeEndpointSlice(ctx context.Context, cs kubernetes.Interface, ips []string, port int32) error {
	name := endpointsPortName
	proto := corev1.ProtocolTCP
	ready := true
	var eps []discoveryv1.Endpoint
	for _, ip := range ips {
		eps = append(eps, discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	ports := []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}
	api := cs.DiscoveryV1().EndpointSlices(endpointsNamespace)
	cur, err := api.Get(ctx, endpointsName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: endpointsName, Namespace: endpointsNamespace,
				Labels: map[string]string{
					discoveryv1.LabelServiceName: endpointsName,
					discoveryv1.LabelManagedBy:   EndpointSliceManagedBy,
				},
			},
			AddressType: discoveryv1.AddressTypeFQDN,
			Endpoints:   eps,
			Ports:       ports,
		}
		if _, err := api.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create endpointslice: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get endpointslice: %w", err)
	}
	cur.Endpoints, cur.Ports = eps, ports
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update endpointslice: %w", err)
	}
	return nil
}
