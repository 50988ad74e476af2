package ha

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/test/kube"
)

// etcdCluster is three etcd members on loopback, TLS for clients and
// peers, client certificates required.
type etcdCluster struct {
	members   []*proc
	clientURL []string
	ca        *testCA
	// ClientCert and ClientKey authenticate the hubs.
	ClientCert, ClientKey string
}

func startEtcd(t *testing.T, ca *testCA) *etcdCluster {
	t.Helper()
	bin := kube.ResolveBinaries(t).Etcd
	ports := freePorts(t, 6)
	cert, key := ca.issue(t, "etcd")
	c := &etcdCluster{ca: ca}
	c.ClientCert, c.ClientKey = ca.issue(t, "etcd-client")
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("m%d=https://127.0.0.1:%d", i, ports[2*i+1]))
	}
	root := t.TempDir()
	for i := range 3 {
		client := fmt.Sprintf("https://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("https://127.0.0.1:%d", ports[2*i+1])
		c.clientURL = append(c.clientURL, client)
		m := &proc{name: fmt.Sprintf("etcd-m%d", i), bin: bin, args: []string{
			"--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(root, fmt.Sprintf("m%d", i)),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "wharf-ha",
			"--cert-file", cert, "--key-file", key, "--trusted-ca-file", ca.CAFile, "--client-cert-auth",
			"--peer-cert-file", cert, "--peer-key-file", key, "--peer-trusted-ca-file", ca.CAFile, "--peer-client-cert-auth",
			"--log-level", "warn",
		}}
		m.start(t)
		m.cleanup(t)
		c.members = append(c.members, m)
	}
	for i := range 3 {
		c.waitHealthy(t, i, 2*time.Minute)
	}
	return c
}

func (c *etcdCluster) client(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	tlsCfg, err := (transport.TLSInfo{CertFile: c.ClientCert, KeyFile: c.ClientKey, TrustedCAFile: c.ca.CAFile}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// waitHealthy waits until member i answers a quorum read.
func (c *etcdCluster) waitHealthy(t *testing.T, i int, timeout time.Duration) {
	t.Helper()
	cli := c.client(t, c.clientURL[i])
	defer cli.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !c.members[i].running() {
			t.Fatalf("etcd member %d not healthy: %v\n%s", i, err, c.members[i].log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hubArgs are the flags that point a hub at this cluster.
func (c *etcdCluster) hubArgs() []string {
	return []string{"--etcd-servers", strings.Join(c.clientURL, ","),
		"--etcd-cafile", c.ca.CAFile, "--etcd-certfile", c.ClientCert, "--etcd-keyfile", c.ClientKey}
}
