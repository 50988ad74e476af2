package ha

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// haproxy passes TLS through to the hub replicas (mode tcp) and takes a
// replica out once its /readyz fails twice, 300 ms apart; a connection
// refused by a replica is redispatched to another.
type haproxy struct {
	*proc
	Port int
	URL  string
}

func startHAProxy(t *testing.T, ca *testCA, port int, hubs []*hubProc) *haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy is not installed (.ci/run installs it: apt-get install -y haproxy): %v", err)
	}
	var servers []string
	for _, h := range hubs {
		servers = append(servers, fmt.Sprintf("  server %s 127.0.0.1:%d", h.Name, h.Port))
	}
	cfg := fmt.Sprintf(`global
  maxconn 4096
defaults
  mode tcp
  timeout connect 2s
  timeout client 10m
  timeout server 10m
  timeout check 2s
  retries 3
  option redispatch
frontend hub
  bind 127.0.0.1:%d
  default_backend hubs
backend hubs
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz hdr Authorization "Bearer %s"
  http-check expect status 200
  default-server inter 300ms fall 2 rise 2 check check-ssl verify required ca-file %s
%s
`, port, checkToken, ca.CAFile, strings.Join(servers, "\n"))
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	writeFile(t, path, []byte(cfg))
	lb := &haproxy{proc: &proc{name: "haproxy", bin: bin, args: []string{"-db", "-f", path}}, Port: port,
		URL: fmt.Sprintf("https://127.0.0.1:%d", port)}
	lb.start(t)
	lb.cleanup(t)
	return lb
}
