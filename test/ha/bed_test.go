package ha

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newBed starts three etcd members, an OpenID provider, two hub replicas
// running singleprobe and trusting that provider, and haproxy in front.
func newBed(t *testing.T) *bed {
	t.Helper()
	_, probe := binaries(t)
	b := &bed{ca: newCA(t), probe: probe, servingLog: filepath.Join(t.TempDir(), "serving.log")}
	b.etcd = startEtcd(t, b.ca)
	ports := freePorts(t, 3)
	lbURL := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	b.idp = startBedIdP(t, lbURL)
	for i, name := range []string{"hub-a", "hub-b"} {
		h := b.newHub(t, hubSpec{name: name, port: ports[i], externalURL: lbURL, etcdArgs: b.etcd.hubArgs(),
			shutdownDelay: 2 * time.Second, withProbe: true, extraArgs: b.idp.hubArgs})
		// One after the other: the first creates root on the fresh etcd.
		h.boot(t, b)
		b.hubs = append(b.hubs, h)
	}
	b.lb = startHAProxy(t, b.ca, ports[2], b.hubs)
	b.waitReady(t, &hubProc{proc: b.lb.proc, Name: "haproxy", URL: b.lb.URL}, time.Minute)
	return b
}

// holder is the replica whose process runs singleprobe, and its plugin
// pid; it waits until exactly one replica runs it.
func (b *bed) holder(t *testing.T) (*hubProc, int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var found *hubProc
		var pid, total int
		for _, h := range b.hubs {
			if !h.running() {
				continue
			}
			kids := children(h.pid(), b.probe)
			total += len(kids)
			if len(kids) == 1 {
				found, pid = h, kids[0]
			}
		}
		if total == 1 {
			return found, pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d singleprobe processes across the replicas", total)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *bed) other(h *hubProc) *hubProc {
	for _, o := range b.hubs {
		if o != h {
			return o
		}
	}
	return nil
}

// children lists the live processes running bin whose parent is pid.
func children(pid int, bin string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || exe != bin {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
