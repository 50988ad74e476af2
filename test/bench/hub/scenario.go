package main

import (
	"context"
	"fmt"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// result is what one scenario measured.
type result struct {
	name          string
	wsWithData    int
	totalCMs      int
	startup       time.Duration    // hub start until /readyz ok
	wsCreate      time.Duration    // creating all workspaces
	smallLoad     time.Duration    // creating the small workspaces' ConfigMaps
	bigLoad       time.Duration    // creating the big workspace's ConfigMaps
	createAll     benchkit.Summary // every ConfigMap create
	createBig     benchkit.Summary // creates into the big workspace
	rssIdle       int64            // KiB, after startup
	rssLoaded     int64            // KiB, after all creates
	rssAfterLists int64            // KiB, after the list measurements
	bigList       listResult
	smallList     *listResult // scenario B only
}

// runScenario starts a fresh hub, loads it and measures it. With many set,
// p.workspaces small workspaces of p.perWorkspace ConfigMaps are loaded
// before the big workspace (scenario B); otherwise only the big one (A).
func runScenario(ctx context.Context, p params, many bool) (res result, err error) {
	res.name = "A"
	if many {
		res.name = "B"
	}
	benchkit.Progress("scenario %s: starting hub", res.name)
	t0 := time.Now()
	h, err := benchkit.StartHub(ctx, benchkit.Options{Bin: p.Bin, DirPrefix: "wharf-bench-hub-", QPS: float32(p.qps), Burst: p.burst})
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			err = h.Annotate(err)
		}
		benchkit.Progress("scenario %s: stopping hub", res.name)
		h.Stop()
	}()
	res.startup = time.Since(t0)
	if res.rssIdle, err = h.RSSKiB(); err != nil {
		return res, err
	}

	var all benchkit.Recorder
	var small []string
	t0 = time.Now()
	if many && p.workspaces > 0 {
		benchkit.Progress("scenario %s: creating %d workspaces", res.name, p.workspaces)
		if small, err = createWorkspaces(ctx, h, "ws", p.workspaces, p.concurrency); err != nil {
			return res, err
		}
	}
	bigWS, err := createWorkspaces(ctx, h, "big", 1, 1)
	if err != nil {
		return res, err
	}
	res.wsCreate = time.Since(t0)

	if len(small) > 0 {
		benchkit.Progress("scenario %s: creating %d x %d ConfigMaps (workspaces took %s)", res.name, len(small), p.perWorkspace, res.wsCreate.Round(time.Millisecond))
		t0 = time.Now()
		if err := createConfigMaps(ctx, h, small, p.perWorkspace, p.concurrency, &all); err != nil {
			return res, err
		}
		res.smallLoad = time.Since(t0)
	}
	benchkit.Progress("scenario %s: creating %d ConfigMaps in %s", res.name, p.big, bigWS[0])
	var big benchkit.Recorder
	t0 = time.Now()
	if err := createConfigMaps(ctx, h, bigWS, p.big, p.concurrency, &big); err != nil {
		return res, err
	}
	res.bigLoad = time.Since(t0)
	all.AddAll(&big)
	res.createAll, res.createBig = all.Summarize(), big.Summarize()
	res.wsWithData = 1 + len(small)
	res.totalCMs = p.big + len(small)*p.perWorkspace
	if res.rssLoaded, err = h.RSSKiB(); err != nil {
		return res, err
	}

	benchkit.Progress("scenario %s: listing %s %d times", res.name, bigWS[0], p.lists)
	if res.bigList, err = measureList(ctx, h, bigWS[0], p.lists, p.big); err != nil {
		return res, err
	}
	if len(small) > 0 {
		ws := small[len(small)/2]
		benchkit.Progress("scenario %s: listing %s %d times", res.name, ws, p.lists)
		sl, err := measureList(ctx, h, ws, p.lists, p.perWorkspace)
		if err != nil {
			return res, err
		}
		res.smallList = &sl
	}
	if res.rssAfterLists, err = h.RSSKiB(); err != nil {
		return res, fmt.Errorf("after lists: %w", err)
	}
	return res, nil
}
