package hub

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Issue 24, B1 (the store side): one tenant filled etcd (256 MiB quota)
// with 1 MB ConfigMaps; every other tenant's writes then got 500
// "database space exceeded", and kept failing after she deleted
// everything, because etcd's NOSPACE alarm stays armed. These rows run a
// hub with a 48 MiB quota and a high-water mark at half of it.

const (
	storeQuota = 48 << 20
	// fillValue is one ConfigMap's data: close to the 1 MiB a ConfigMap
	// may hold, as in the attack.
	fillSize = 900 << 10
	// fullMessage is what every refused write says.
	fullMessage = "the hub's store is nearly full"
)

func TestAttackLimitsStore(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(attackTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{
		"--token-auth-file", tokens, "--admin-user", "hubadmin",
		"--etcd-quota-backend-bytes", strconv.Itoa(storeQuota),
		"--storage-high-water-fraction", "0.5", "--storage-poll-interval", "500ms",
		// One tenant stands for many here: on a 48 MiB store the byte
		// ceilings would stop her at 6 MiB, long before the mark.
		"--max-tenant-bytes", "0", "--max-workspace-bytes", "0",
	}})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{
		"alice": "alice-token", "carol": "carol-token", "hubadmin": "hubadmin-token", "admin": h.Token,
	}}
	e.etcd = hubEtcd(t, h)
	for _, who := range []string{"alice", "carol"} {
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK || w.Home == nil {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"] = w.Home.Path
	}
	vars := e.vars
	// A kind (CRDs are hub-wide, made by a hub admin), and one object of
	// each kind in the victim's home to change later.
	mustStep(t, e, step{as: "admin", method: http.MethodPost, path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
		ctype: "application/yaml", body: openCRD("store.example.com", "widgets", "Widget")}, http.StatusCreated)
	eventually(t, 60*time.Second, func() error {
		code, body := e.as("carol", http.MethodPost, "/clusters/{carolHome}/apis/store.example.com/v1/namespaces/default/widgets",
			`{"apiVersion":"store.example.com/v1","kind":"Widget","metadata":{"name":"w0"},"spec":{"a":1}}`, vars)
		if code != http.StatusCreated && code != http.StatusConflict {
			return fmt.Errorf("widget: %d %s", code, body)
		}
		return nil
	})
	mustStep(t, e, step{as: "carol", method: http.MethodPost, path: "/clusters/{carolHome}/api/v1/namespaces/default/configmaps",
		body: `{"metadata":{"name":"c0"},"data":{"a":"1"}}`}, http.StatusCreated)
	mustStep(t, e, step{as: "carol", method: http.MethodPost, path: "/clusters/{carolHome}/api/v1/namespaces/default/configmaps",
		body: `{"metadata":{"name":"c-del"},"data":{"a":"1"}}`}, http.StatusCreated)

	t.Run("B1/tenant fills the store to the high-water mark, never to NOSPACE", func(t *testing.T) {
		// Near the mark a write that would pass it is refused, so she
		// goes on with smaller ones until the store is above it.
		size := fillSize
		var accepted, refused int
		for i := 0; i < 600 && !(refused > 0 && metricValue(t, e, "wharf_store_high_water") == 1); i++ {
			code, body := e.as("alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps",
				fmt.Sprintf(`{"metadata":{"name":"fill-%d","labels":{"fill":"1"}},"data":{"v":%q}}`, i, strings.Repeat("x", size)), vars)
			switch {
			case code == http.StatusCreated:
				accepted++
			case code == http.StatusForbidden && strings.Contains(body, fullMessage):
				refused++
				size = max(size/2, 64<<10)
				time.Sleep(time.Second) // let a poll measure (pacing, not an assertion)
			default:
				t.Fatalf("fill %d: %d %s", i, code, body)
			}
		}
		t.Logf("alice: %d ConfigMaps (up to %d kB) accepted, %d refused", accepted, fillSize>>10, refused)
		if refused == 0 || metricValue(t, e, "wharf_store_high_water") != 1 {
			t.Fatalf("the store never reached its high-water mark after %d writes", accepted)
		}
		noAlarm(t, e)
	})

	cm := "/clusters/{carolHome}/api/v1/namespaces/default/configmaps"
	wd := "/clusters/{carolHome}/apis/store.example.com/v1/namespaces/default/widgets"
	apply := "application/apply-patch+yaml"
	refusedSteps := []struct {
		name string
		s    step
	}{
		{"create configmap", step{method: http.MethodPost, path: cm, body: `{"metadata":{"name":"c1"}}`}},
		{"dry-run create", step{method: http.MethodPost, path: cm + "?dryRun=All", body: `{"metadata":{"name":"c1"}}`}},
		{"server-side apply configmap", step{method: http.MethodPatch, path: cm + "/c2?fieldManager=t", ctype: apply,
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c2"},"data":{"a":"1"}}`}},
		{"update configmap", step{method: http.MethodPut, path: cm + "/c0", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c0"},"data":{"a":"2"}}`}},
		{"merge-patch configmap", step{method: http.MethodPatch, path: cm + "/c0", body: `{"data":{"b":"2"}}`}},
		{"create custom resource", step{method: http.MethodPost, path: wd, body: `{"apiVersion":"store.example.com/v1","kind":"Widget","metadata":{"name":"w1"}}`}},
		{"server-side apply custom resource", step{method: http.MethodPatch, path: wd + "/w2?fieldManager=t", ctype: apply,
			body: `{"apiVersion":"store.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"a":1}}`}},
		{"update custom resource", step{method: http.MethodPut, path: wd + "/w0", body: `{"apiVersion":"store.example.com/v1","kind":"Widget","metadata":{"name":"w0","resourceVersion":"{wRV}"},"spec":{"a":2}}`}},
		{"merge-patch custom resource", step{method: http.MethodPatch, path: wd + "/w0", body: `{"spec":{"b":2}}`}},
	}
	// Custom resources take no unconditional update.
	widgetRV := func() {
		code, body := e.as("carol", http.MethodGet, wd+"/w0", "", vars)
		m := regexp.MustCompile(`"resourceVersion":"(\d+)"`).FindStringSubmatch(body)
		if code != http.StatusOK || m == nil {
			t.Fatalf("widget w0: %d %s", code, body)
		}
		vars["wRV"] = m[1]
	}
	t.Run("B1/another tenant's writes get a clear 403, reads and deletes work", func(t *testing.T) {
		widgetRV()
		for _, r := range refusedSteps {
			s := r.s
			s.as, s.want, s.has = "carol", http.StatusForbidden, fullMessage
			e.run(t, 0, s, vars)
			if code, body := e.send(s, vars); strings.Contains(body, "database space exceeded") {
				t.Errorf("%s: etcd's error reached the client: %d %s", r.name, code, body)
			}
		}
		mustStep(t, e, step{as: "carol", method: http.MethodGet, path: cm + "/c0"}, http.StatusOK)
		mustStep(t, e, step{as: "carol", method: http.MethodGet, path: wd}, http.StatusOK)
		mustStep(t, e, step{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps?labelSelector=fill"}, http.StatusOK)
		mustStep(t, e, step{as: "carol", method: http.MethodDelete, path: cm + "/c-del"}, http.StatusOK)
		// A hub admin still writes.
		mustStep(t, e, step{as: "hubadmin", method: http.MethodPost, path: cm, body: `{"metadata":{"name":"by-admin"}}`}, http.StatusCreated)
		if metricValue(t, e, "wharf_store_refused_writes_total") < float64(len(refusedSteps)) {
			t.Errorf("wharf_store_refused_writes_total below the %d refusals", len(refusedSteps))
		}
		noAlarm(t, e)
	})

	t.Run("B1/after the tenant deletes, the hub compacts and defragments and writes work again", func(t *testing.T) {
		mustStep(t, e, step{as: "alice", method: http.MethodDelete, path: "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps?labelSelector=fill"}, http.StatusOK)
		eventually(t, 3*time.Minute, func() error {
			code, body := e.as("carol", http.MethodPost, cm, `{"metadata":{"name":"c-after"}}`, vars)
			if code != http.StatusCreated {
				return fmt.Errorf("carol's create: %d %s", code, body)
			}
			return nil
		})
		widgetRV()
		for _, r := range refusedSteps {
			s := r.s
			s.as = "carol"
			if code, body := e.send(s, vars); code >= 300 && code != http.StatusConflict {
				t.Errorf("%s after the deletes: %d %s", r.name, code, body)
			}
		}
		eventually(t, 2*time.Minute, func() error {
			if v := metricValue(t, e, "wharf_store_defrags_total"); v < 1 {
				return fmt.Errorf("no defragmentation yet")
			}
			if v := metricValue(t, e, "wharf_store_compactions_total"); v < 1 {
				return fmt.Errorf("no compaction yet")
			}
			return nil
		})
		wantEvents(t, e, "StoreHighWater", "StoreBelowHighWater")
		noAlarm(t, e)
	})

	t.Run("B1/an armed NOSPACE alarm is disarmed by the hub once space is free", func(t *testing.T) {
		ctx := context.Background()
		st, err := e.etcd.Status(ctx, e.etcd.Endpoints()[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pb.NewMaintenanceClient(e.etcd.ActiveConnection()).Alarm(ctx, &pb.AlarmRequest{
			Action: pb.AlarmRequest_ACTIVATE, MemberID: st.Header.MemberId, Alarm: pb.AlarmType_NOSPACE,
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, func() error {
			al, err := e.etcd.AlarmList(ctx)
			if err != nil {
				return err
			}
			if len(al.Alarms) != 0 {
				return fmt.Errorf("alarms still armed: %v", al.Alarms)
			}
			code, body := e.as("carol", http.MethodPost, cm, `{"metadata":{"name":"c-after-alarm"}}`, vars)
			if code != http.StatusCreated {
				return fmt.Errorf("carol's create: %d %s", code, body)
			}
			return nil
		})
		if metricValue(t, e, "wharf_store_alarm_disarms_total") < 1 {
			t.Error("wharf_store_alarm_disarms_total is 0")
		}
		wantEvents(t, e, "StoreAlarmDisarmed")
	})
}

// hubEtcd connects to the hub's embedded etcd through its socket.
func hubEtcd(t *testing.T, h *hubProc) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"unix://" + filepath.Join(h.opts.dataDir, "etcd", "etcd.sock")}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustStep(t *testing.T, e *attackEnv, s step, want int) {
	t.Helper()
	s.want = want
	e.run(t, 0, s, e.vars)
}

// noAlarm fails unless etcd is below its quota with no alarm armed.
func noAlarm(t *testing.T, e *attackEnv) {
	t.Helper()
	ctx := context.Background()
	al, err := e.etcd.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(al.Alarms) != 0 {
		t.Fatalf("etcd alarms armed: %v", al.Alarms)
	}
	st, err := e.etcd.Status(ctx, e.etcd.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd: dbSize %d, in use %d, quota %d", st.DbSize, st.DbSizeInUse, storeQuota)
	if st.DbSize >= storeQuota {
		t.Fatalf("etcd's file reached its quota: %d", st.DbSize)
	}
}

// metricValue reads one unlabelled sample from the hub's /metrics.
func metricValue(t *testing.T, e *attackEnv, name string) float64 {
	t.Helper()
	code, body := e.as("hubadmin", http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics lacks %s", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantEvents waits for events of these reasons in root's default
// namespace.
func wantEvents(t *testing.T, e *attackEnv, reasons ...string) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		code, body := e.as("hubadmin", http.MethodGet, "/clusters/root/api/v1/namespaces/default/events", "", nil)
		if code != http.StatusOK {
			return fmt.Errorf("events: %d %s", code, body)
		}
		for _, r := range reasons {
			if !strings.Contains(body, `"reason":"`+r+`"`) {
				return fmt.Errorf("no %s event in root", r)
			}
		}
		return nil
	})
}
