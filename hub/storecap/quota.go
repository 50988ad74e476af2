package storecap

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"
)

// quotaMetric is the gauge every etcd member publishes with its backend
// quota (etcd server/storage/quota.go).
const quotaMetric = "etcd_server_quota_backend_bytes"

// ExternalQuota returns the quota of an external cluster: the smallest
// that its members publish, capped by flag when flag is set. When no member
// answers it returns flag, or etcd's default when flag is 0: guessing high
// would let the store fill.
func ExternalQuota(ctx context.Context, t storagebackend.TransportConfig, flag int64) int64 {
	var tlsCfg *tls.Config
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
		c, err := info.ClientConfig()
		if err != nil {
			klog.ErrorS(err, "Reading etcd's quota: client TLS")
		}
		tlsCfg = c
	}
	var found int64
	for _, ep := range t.ServerList {
		q, err := ReadQuota(ctx, ep, tlsCfg)
		if err != nil {
			klog.InfoS("Cannot read etcd's quota from a member", "endpoint", ep, "err", err)
			continue
		}
		if q > 0 && (found == 0 || q < found) {
			found = q
		}
	}
	switch {
	case found > 0 && flag > 0 && flag < found:
		klog.InfoS("Using --etcd-quota-backend-bytes, smaller than etcd's quota", "flag", flag, "etcd", found)
		return flag
	case found > 0:
		klog.InfoS("Read etcd's backend quota", "bytes", found)
		return found
	case flag > 0:
		klog.InfoS("etcd's quota unreadable; using --etcd-quota-backend-bytes", "bytes", flag)
		return flag
	default:
		klog.InfoS("etcd's quota unreadable; assuming etcd's default", "bytes", EtcdDefaultQuota)
		return EtcdDefaultQuota
	}
}

// ReadQuota reads one member's quota from /metrics on its client URL
// (http, https or unix). A negative or zero value (quota disabled) is an
// error: the hub then falls back to its flag.
func ReadQuota(ctx context.Context, endpoint string, tlsCfg *tls.Config) (int64, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0, fmt.Errorf("etcd endpoint %q: %w", endpoint, err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	target := *u
	switch u.Scheme {
	case "http", "https":
	case "unix", "unixs":
		sock := u.Path
		if u.Host != "" {
			sock = u.Host + u.Path
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}
		target = url.URL{Scheme: "http", Host: "etcd"}
		if u.Scheme == "unixs" {
			target.Scheme = "https"
		}
	default:
		return 0, fmt.Errorf("etcd endpoint %q: unsupported scheme", endpoint)
	}
	target.Path = "/metrics"
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading %s/metrics: %w", endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("reading %s/metrics: %s", endpoint, resp.Status)
	}
	return parseQuota(resp.Body)
}

// parseQuota finds the quota gauge in Prometheus text exposition. The
// gauge has no labels, so one line carries it; a full parser
// (prometheus/common/expfmt) would bring a new direct dependency for that.
func parseQuota(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, quotaMetric)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.IndexByte(rest, '}'); rest != "" && rest[0] == '{' {
			if i < 0 {
				continue
			}
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", quotaMetric, err)
		}
		if v <= 0 {
			return 0, fmt.Errorf("%s is %v: quota disabled", quotaMetric, v)
		}
		return int64(v), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s not published", quotaMetric)
}
