package hub

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 24, eighth outside review, B1 (watch fan-out): mallory opens 500
// watches of one collection of hers and rewrites one small ConfigMap 8 at
// a time, inside her write rate; the watch cache hands every write to
// every watcher, and another tenant fell from 1,246 to 36-51 requests a
// second. Her events (~450 bytes each) kept her within her traffic
// budget, and a watch whose selector matched nothing was charged 4 bytes
// an event and never ended. Now each event a watch evaluates or is sent
// costs at least WatchEventBytes (2 KiB, hub/fairness), so her fan-out
// puts her in debt and the hub ends her watches.
//
// The row: 100 watches of her default ConfigMaps whose selector matches
// nothing, then 2,000 PUTs of one ConfigMap there (c=8). Outcomes, never
// times: at least half of her watches are ended by the hub (her tenant in
// debt), alice's operations all succeed, the hub stays ready. On c868fb1
// none was ended.
func TestAttackLimitsReview8Watches(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t)
	h := e.h
	ws := "/clusters/" + e.vars["malloryHome"]
	if code, body := e.as("mallory", http.MethodPost, cmPath(ws), cmJSON("cf"), nil); code != http.StatusCreated {
		t.Fatalf("create cf: %d %s", code, body)
	}
	// Watches from the list's resource version: no initial list each.
	code, list := e.as("mallory", http.MethodGet, cmPath(ws), "", nil)
	m := regexp.MustCompile(`"resourceVersion":"(\d+)"`).FindStringSubmatch(list)
	if code != http.StatusOK || m == nil {
		t.Fatalf("list: %d %.300s", code, list)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := r5Client(h, 0)
	var ended atomic.Int64
	var wg sync.WaitGroup
	started := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 100 opened at once are more than her share of seats and
			// queue: a refused one is sent again, as a client honouring
			// Retry-After does.
			var resp *http.Response
			for range 20 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+cmPath(ws)+"?watch=1&resourceVersion="+m[1]+"&labelSelector="+url.QueryEscape("app=none"), nil)
				req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
				var err error
				if resp, err = cl.Do(req); err != nil {
					started <- err
					return
				}
				if resp.StatusCode != http.StatusTooManyRequests {
					break
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				time.Sleep(time.Second)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				started <- fmt.Errorf("watch: %d %.200s", resp.StatusCode, b)
				return
			}
			started <- nil
			_, _ = io.Copy(io.Discard, resp.Body)
			if ctx.Err() == nil {
				ended.Add(1)
			}
		}()
	}
	for range 100 {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	victimDone := r4Victim(e, "r8b1", r5VictimOps)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cf"},"data":{"a":"%d"}}`
	var puts atomic.Int64
	var pw sync.WaitGroup
	codes := &codes{}
	for w := range 8 {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := w; i < 2000; i += 8 {
				code, _ := h.doAs(e.tokens["mallory"], http.MethodPut, cmPath(ws)+"/cf", fmt.Sprintf(body, i))
				codes.add(fmt.Sprint(code))
				puts.Add(1)
			}
		}()
	}
	pw.Wait()
	failed := <-victimDone
	eventually(t, time.Minute, func() error {
		if n := ended.Load(); n < 50 {
			return fmt.Errorf("%d of her 100 watches ended by the hub", n)
		}
		return nil
	})
	t.Logf("r8:b1: her PUTs %s; %d of her 100 watches ended by the hub; alice: %d of %d operations failed", codes, ended.Load(), len(failed), r5VictimOps)
	cancel()
	wg.Wait()
	hubHealthy(t, h)
	if len(failed) > 0 {
		t.Errorf("alice: %d of %d operations failed: %s", len(failed), r5VictimOps, strings.Join(failed[:min(len(failed), 5)], "; "))
	}
}
