package ha

import (
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// haproxy passes TLS through to the hub replicas (mode tcp) and takes a
// replica out once its /readyz fails twice, 300 ms apart; a connection
// refused by a replica is redispatched to another.
type haproxy struct {
	*proc
	Port int
	URL  string
	sock string
}

// serverStat is one backend server's line of "show stat".
type serverStat struct {
	status  string // UP, DOWN, ...
	current int    // sessions open now
}

// stats reads the backend servers' state from haproxy's stats socket.
func (lb *haproxy) stats() (map[string]serverStat, error) {
	c, err := net.DialTimeout("unix", lb.sock, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write([]byte("show stat\n")); err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(c).ReadAll()
	if err != nil {
		return nil, err
	}
	out := map[string]serverStat{}
	if len(rows) == 0 {
		return out, nil
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimPrefix(h, "# ")] = i
	}
	for _, r := range rows[1:] {
		if len(r) <= col["status"] || r[col["pxname"]] != "hubs" || r[col["svname"]] == "BACKEND" {
			continue
		}
		cur, _ := strconv.Atoi(r[col["scur"]])
		out[r[col["svname"]]] = serverStat{status: r[col["status"]], current: cur}
	}
	return out, nil
}

// waitAllUp waits until haproxy sends to every replica.
func (lb *haproxy) waitAllUp(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := lb.stats()
		up := 0
		for _, s := range st {
			if s.status == "UP" {
				up++
			}
		}
		if err == nil && up == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy: %d of %d replicas up: %v %v", up, n, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func startHAProxy(t *testing.T, ca *testCA, port int, hubs []*hubProc) *haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy is not installed (.ci/run installs it: apt-get install -y haproxy): %v", err)
	}
	sock := filepath.Join(t.TempDir(), "stats.sock")
	var servers []string
	for _, h := range hubs {
		servers = append(servers, fmt.Sprintf("  server %s 127.0.0.1:%d", h.Name, h.Port))
	}
	// The health check carries no credential, as a load balancer's or
	// kubelet's: the hub answers /readyz to anonymous callers (issue 17).
	cfg := fmt.Sprintf(`global
  maxconn 4096
  stats socket %s level operator
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
  http-check send meth GET uri /readyz
  http-check expect status 200
  default-server inter 300ms fall 2 rise 2 check check-ssl verify required ca-file %s
%s
`, sock, port, ca.CAFile, strings.Join(servers, "\n"))
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	writeFile(t, path, []byte(cfg))
	lb := &haproxy{proc: &proc{name: "haproxy", bin: bin, args: []string{"-db", "-f", path}}, Port: port, sock: sock,
		URL: fmt.Sprintf("https://127.0.0.1:%d", port)}
	lb.start(t)
	lb.cleanup(t)
	return lb
}
