package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The CPU attacks of issue 24's second review (B-A, B-B, B-C): requests
// that stay within the attacker's share of seats but burn CPU, so that the
// victim and the hub's own lease renewals wait for a core. Each sends over
// HTTP/1.1, one connection per worker, as the reviewer's load generator
// did, and runs for at most -cpu-attack-time, so a row stays short.

// cpuAttacks are added to attackByName in init: their titles name their
// scales, which are flags.
var cpuAttacks = map[string]attack{
	"B-A": {name: "B-A", title: "dry-run POSTs of an 889 kB ConfigMap with 60,000 keys in the attacker's home", run: manyKeysFlood, cleanup: quiesce},
	"B-B": {name: "B-B", title: "dry-run merge patches of 900 kB ConfigMaps in the attacker's home", prepare: prepareBigPatch, run: bigPatchFlood, cleanup: cleanAndQuiesce},
	"B-C": {name: "B-C", title: "GETs of /openapi/v2, /openapi/v3/api/v1 and /apis in the attacker's home", run: openAPIFlood, cleanup: quiesce},
}

func init() {
	for k, v := range cpuAttacks {
		attackByName[k] = v
	}
}

// manyKeysBody is the B-A ConfigMap: 60,000 one-letter values, 889 kB
// written as the reviewer's (Python's json.dumps, with its spaces).
func manyKeysBody() []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "many-keys"}, "data": {`)
	for i := range 60_000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"k%d": "v"`, i)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// B-A: every request decodes and validates 60,000 keys, even when
// admission refuses it; dryRun=All keeps the store out of it.
func manyKeysFlood(ctx context.Context, e *env, n *note) error {
	body := manyKeysBody()
	url := e.h.URL() + "/clusters/" + e.attacker.home + "/api/v1/namespaces/default/configmaps?dryRun=All"
	codes := cpuFlood(ctx, e, e.p.cpuWrites, func(ctx context.Context, _ int64) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
	n.add("%d concurrent POSTs of %d kB: %s", e.p.cpuWrites, len(body)/1000, codes)
	return nil
}

// bigPatchCMs is how many 900 kB ConfigMaps B-B patches in turn.
const bigPatchCMs = 4

// prepareBigPatch creates the ConfigMaps B-B patches (3.6 MB, within the
// attacker's quota).
func prepareBigPatch(ctx context.Context, e *env, n *note) error {
	cms := e.attacker.cs.CoreV1().ConfigMaps("default")
	d := payload(900_000)
	got, err := createUntilRefused(ctx, bigPatchCMs, 2, func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("patched-%d", i), Labels: labels()}, Data: map[string]string{"x": d}}, metav1.CreateOptions{})
		return err
	})
	n.add("%d/%d×900kB CMs %s", got, bigPatchCMs, refusal(err))
	return nil
}

// B-B: merge patches as large as the object, each different (a counter),
// as dry runs: the review's lease gaps came from the dry runs, and a
// stored 900 kB revision per patch would fill the store within a row.
func bigPatchFlood(ctx context.Context, e *env, n *note) error {
	y := payload(900_000)
	base := e.h.URL() + "/clusters/" + e.attacker.home + "/api/v1/namespaces/default/configmaps/"
	codes := cpuFlood(ctx, e, e.p.cpuPatches, func(ctx context.Context, i int64) (*http.Request, error) {
		body := fmt.Sprintf(`{"data":{"x":%q,"n":"%d"}}`, y, i)
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, fmt.Sprintf("%spatched-%d?dryRun=All", base, i%bigPatchCMs), strings.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		return req, err
	})
	n.add("%d concurrent 900 kB merge patches: %s", e.p.cpuPatches, codes)
	return nil
}

// B-C: OpenAPI and discovery documents rendered for the attacker's home.
func openAPIFlood(ctx context.Context, e *env, n *note) error {
	home := e.h.URL() + "/clusters/" + e.attacker.home
	paths := []string{"/openapi/v2", "/openapi/v3/api/v1", "/apis"}
	codes := cpuFlood(ctx, e, e.p.cpuReads, func(ctx context.Context, i int64) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, home+paths[i%int64(len(paths))], nil)
	})
	n.add("%d concurrent GETs: %s", e.p.cpuReads, codes)
	return nil
}

// cpuFlood sends the requests newReq makes on workers goroutines with the
// attacker's HTTP/1.1 client (it carries her token) until ctx ends or -cpu-attack-time passed,
// reading every answer whole, and tallies the codes.
func cpuFlood(ctx context.Context, e *env, workers int, newReq func(ctx context.Context, i int64) (*http.Request, error)) string {
	ctx, cancel := context.WithTimeout(ctx, e.p.cpuAttackTime)
	defer cancel()
	var codes countCodes
	var seq, cut atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, err := newReq(ctx, seq.Add(1))
				if err != nil {
					codes.add(0)
					return
				}
				resp, err := e.attacker.http1.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				switch {
				case ctx.Err() != nil:
					cut.Add(1)
				case err != nil:
					codes.add(0)
					sleep(ctx, 100*time.Millisecond)
				default:
					codes.add(resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("%s in %s, %d unanswered at its end", codes.String(), time.Since(t0).Round(time.Second), cut.Load())
}

// quiesce waits (at most 60 s) until the hub uses less than a fifth of a
// core for two seconds in a row: the hub goes on decoding requests the
// attacker gave up on, which would otherwise fall into the next row's
// baseline.
func quiesce(ctx context.Context, e *env, n *note) error {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	quiet := 0
	last, ok := cpuTime(e.h.Pid())
	for ok && quiet < 2 && ctx.Err() == nil {
		sleep(ctx, time.Second)
		now, ok2 := cpuTime(e.h.Pid())
		if !ok2 {
			break
		}
		if now-last < 200*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	if quiet < 2 {
		n.add("hub NOT idle %s after the attack", time.Since(t0).Round(time.Second))
		return nil
	}
	n.add("hub idle %s after the attack", time.Since(t0).Round(time.Second))
	return nil
}

func cleanAndQuiesce(ctx context.Context, e *env, n *note) error {
	err := cleanCMs(ctx, e, n)
	_ = quiesce(ctx, e, n)
	return err
}

// cpuTime is the CPU time pid has used (user and system), from
// /proc/<pid>/stat in clock ticks of 10 ms (USER_HZ is 100 on Linux).
func cpuTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}
