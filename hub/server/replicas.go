package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/leases"
	"github.com/wharfhub/wharf/hub/plugins"
	"github.com/wharfhub/wharf/hub/proxy"
	"github.com/wharfhub/wharf/hub/replicas"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// ReplicaOptions name this hub replica among the replicas sharing etcd.
type ReplicaOptions struct {
	// Name identifies the replica in the registry and as Lease holder.
	Name string
	// InternalURL is where other replicas reach this one.
	InternalURL string
}

// AddFlags binds the options to fs.
func (o *ReplicaOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Name, "replica-name", o.Name, "Name of this hub replica among those sharing etcd (default: host name plus a digest of --data-dir).")
	fs.StringVar(&o.InternalURL, "internal-url", o.InternalURL, "URL other hub replicas use to reach this one, to forward requests for replicas: single providers (default https://<bind-address>:<secure-port>).")
}

// completeReplica fills in the defaults; DataDir must be absolute already.
func (o *Options) completeReplica() {
	if o.Replica.Name == "" {
		o.Replica.Name = replicas.DefaultName(o.DataDir)
	}
	if o.Replica.InternalURL == "" {
		host := o.SecureServing.BindAddress.String()
		if o.SecureServing.BindAddress.IsUnspecified() {
			host = "127.0.0.1"
		}
		o.Replica.InternalURL = (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, fmt.Sprint(o.SecureServing.BindPort))}).String()
	}
}

// Validate reports every invalid option.
func (o *ReplicaOptions) Validate() []error {
	var errs []error
	if err := replicas.ValidateName(o.Name); err != nil {
		errs = append(errs, fmt.Errorf("--replica-name: %w", err))
	}
	if u, err := url.Parse(o.InternalURL); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--internal-url %q must be an absolute https URL", o.InternalURL))
	}
	return errs
}

// replicaSet is this hub replica among its peers: the registry entry,
// the shared-secret assertions of the forwarding hop, and the Leases that
// decide where replicas: single providers run.
type replicaSet struct {
	name     string
	registry *replicas.Registry
	peers    *replicas.Peers
	asserter *replicas.Asserter
	gate     *leases.Gate
	// leaseTransport serves the gate's requests in process once start
	// gives it the server's handler.
	leaseTransport *inProcess
	// namespaces reads root's namespaces: the Leases live in kube-system.
	namespaces corev1client.NamespacesGetter
	// ready is closed once the hub serves: only then is it registered and
	// does it compete for Leases (through its own API).
	ready chan struct{}
}

// newReplicaSet prepares the replica's identity; nothing runs before
// start. loopback must already carry the loopback token.
func (o *Options) newReplicaSet(ctx context.Context, extra *ExtraConfig, loopback *rest.Config) (*replicaSet, error) {
	secret, err := replicas.LoadOrCreateSecret(ctx, extra.EtcdClient, extra.EtcdPrefix)
	if err != nil {
		return nil, err
	}
	ca := extra.CAData
	rs := &replicaSet{name: o.Replica.Name, ready: make(chan struct{})}
	if rs.asserter, err = replicas.NewAsserter(rs.name, secret); err != nil {
		return nil, err
	}
	rs.registry = replicas.NewRegistry(extra.EtcdClient, extra.EtcdPrefix,
		replicas.Replica{Name: rs.name, InternalURL: o.Replica.InternalURL, CABundle: ca})
	rs.peers = replicas.NewPeers(rs.registry)
	root := rest.CopyConfig(loopback)
	root.Host = strings.TrimSuffix(root.Host, "/") + "/clusters/" + string(cluster.RootPath)
	// Lease renewals are served in process (leaseclient.go).
	leaseCfg, inproc, err := inProcessConfig(root)
	if err != nil {
		return nil, err
	}
	rs.leaseTransport = inproc
	client, err := coordinationv1client.NewForConfig(leaseCfg)
	if err != nil {
		return nil, fmt.Errorf("lease client: %w", err)
	}
	if rs.namespaces, err = corev1client.NewForConfig(root); err != nil {
		return nil, fmt.Errorf("namespace client: %w", err)
	}
	if rs.gate, err = leases.New(leases.Config{Client: client, Identity: rs.name, Ready: rs.ready}); err != nil {
		return nil, err
	}
	return rs, nil
}

// start registers the replica once the server listens, and then lets the
// Leases be contested.
func (rs *replicaSet) start(s *genericapiserver.GenericAPIServer) error {
	rs.leaseTransport.set(s.Handler)
	return s.AddPostStartHook("wharf-replica-registry", func(hc genericapiserver.PostStartHookContext) error {
		go rs.registry.Run(hc)
		go func() {
			rs.waitLeaseNamespace(hc)
			close(rs.ready)
		}()
		return nil
	})
}

// waitLeaseNamespace waits (boundedly) until root's kube-system exists,
// which another post-start hook creates on the very first start, so that
// leader election does not begin with a failed create. Leader election
// retries anyway; this only spares a spurious error.
func (rs *replicaSet) waitLeaseNamespace(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := rs.namespaces.Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		return err == nil, nil
	})
}

// targets adds forwarding to local: a replicas: single provider held by
// another replica is reached through that replica. While no holder is
// known (or it is not registered) the provider has no transport: 503.
func (rs *replicaSet) targets(local proxy.Providers, h *plugins.Host) proxy.Providers {
	return proxy.ProvidersFunc(func(name string) (proxy.Target, bool) {
		t, ok := local.Get(name)
		if !ok {
			return t, false
		}
		st, _ := h.Status(name)
		if st.Descriptor == nil || st.Descriptor.Replicas != plugin.ReplicasSingle {
			return t, true
		}
		holder, held := h.Holder(name)
		if !held || holder == rs.name {
			return t, true
		}
		t.Transport = nil
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		peer, err := rs.peers.Get(ctx, holder)
		if err != nil {
			klog.V(2).InfoS("Holder of single-replica provider unreachable", "provider", name, "holder", holder, "err", err)
			return t, true
		}
		t.Remote = &proxy.Remote{Replica: holder, URL: peer.URL, Transport: peer.Transport, From: rs.name}
		return t, true
	})
}
