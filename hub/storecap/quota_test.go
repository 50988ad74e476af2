package storecap

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/storage/storagebackend"
)

func TestParseQuota(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int64
		wantErr    bool
	}{
		{"plain", "# HELP x\n# TYPE etcd_server_quota_backend_bytes gauge\netcd_server_quota_backend_bytes 2.68435456e+08\n", 268435456, false},
		{"labels", "etcd_server_quota_backend_bytes{a=\"b\"} 1024\n", 1024, false},
		{"prefix of another metric", "etcd_server_quota_backend_bytes_total 5\n", 0, true},
		{"disabled", "etcd_server_quota_backend_bytes -1\n", 0, true},
		{"missing", "etcd_server_has_leader 1\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseQuota(strings.NewReader(tc.text))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %d, %v; want %d, error %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// A real member publishes its quota on its client URL (here a unix
// socket), and the external-quota rule takes the smaller of it and the
// flag.
func TestExternalQuotaFromMetrics(t *testing.T) {
	e, _ := startEtcd(t)
	ctx := context.Background()
	if got, err := ReadQuota(ctx, e.ClientURL, nil); err != nil || got != testQuota {
		t.Fatalf("ReadQuota = %d, %v; want %d", got, err, testQuota)
	}
	tc := storagebackend.TransportConfig{ServerList: []string{e.ClientURL}}
	for _, c := range []struct {
		flag, want int64
	}{{0, testQuota}, {16 << 20, 16 << 20}, {64 << 20, testQuota}} {
		if got := ExternalQuota(ctx, tc, c.flag); got != c.want {
			t.Errorf("flag %d: quota %d, want %d", c.flag, got, c.want)
		}
	}
	dead := storagebackend.TransportConfig{ServerList: []string{"unix:///nonexistent/etcd.sock"}}
	if got := ExternalQuota(ctx, dead, 0); got != EtcdDefaultQuota {
		t.Errorf("unreadable, no flag: %d, want etcd's default", got)
	}
	if got := ExternalQuota(ctx, dead, 48<<20); got != 48<<20 {
		t.Errorf("unreadable, flag: %d, want the flag", got)
	}
}
