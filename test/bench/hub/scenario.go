package main

import (
	"context"
	"fmt"
	"time"
)

// result is what one scenario measured.
type result struct {
	name          string
	wsWithData    int
	totalCMs      int
	startup       time.Duration // hub start until /readyz ok
	wsCreate      time.Duration // creating all workspaces
	smallLoad     time.Duration // creating the small workspaces' ConfigMaps
	bigLoad       time.Duration // creating the big workspace's ConfigMaps
	createAll     summary       // every ConfigMap create
	createBig     summary       // creates into the big workspace
	rssIdle       int64         // KiB, after startup
	rssLoaded     int64         // KiB, after all creates
	rssAfterLists int64         // KiB, after the list measurements
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
	progress("scenario %s: starting hub", res.name)
	t0 := time.Now()
	h, err := startHub(ctx, p.bin, float32(p.qps), p.burst)
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			state := "still running"
			select {
			case <-h.exited:
				state = fmt.Sprintf("exited: %v", h.exitErr)
			case <-time.After(3 * time.Second):
			}
			err = fmt.Errorf("%w\nhub %s; its log ends:\n%s", err, state, h.logTail(60))
		}
		progress("scenario %s: stopping hub", res.name)
		h.stop()
	}()
	res.startup = time.Since(t0)
	if res.rssIdle, err = h.rssKiB(); err != nil {
		return res, err
	}

	var all recorder
	var small []string
	t0 = time.Now()
	if many && p.workspaces > 0 {
		progress("scenario %s: creating %d workspaces", res.name, p.workspaces)
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
		progress("scenario %s: creating %d x %d ConfigMaps (workspaces took %s)", res.name, len(small), p.perWorkspace, res.wsCreate.Round(time.Millisecond))
		t0 = time.Now()
		if err := createConfigMaps(ctx, h, small, p.perWorkspace, p.concurrency, &all); err != nil {
			return res, err
		}
		res.smallLoad = time.Since(t0)
	}
	progress("scenario %s: creating %d ConfigMaps in %s", res.name, p.big, bigWS[0])
	var big recorder
	t0 = time.Now()
	if err := createConfigMaps(ctx, h, bigWS, p.big, p.concurrency, &big); err != nil {
		return res, err
	}
	res.bigLoad = time.Since(t0)
	for _, d := range big.d {
		all.add(d)
	}
	res.createAll, res.createBig = all.summarize(), big.summarize()
	res.wsWithData = 1 + len(small)
	res.totalCMs = p.big + len(small)*p.perWorkspace
	if res.rssLoaded, err = h.rssKiB(); err != nil {
		return res, err
	}

	progress("scenario %s: listing %s %d times", res.name, bigWS[0], p.lists)
	if res.bigList, err = measureList(ctx, h, bigWS[0], p.lists, p.big); err != nil {
		return res, err
	}
	if len(small) > 0 {
		ws := small[len(small)/2]
		progress("scenario %s: listing %s %d times", res.name, ws, p.lists)
		sl, err := measureList(ctx, h, ws, p.lists, p.perWorkspace)
		if err != nil {
			return res, err
		}
		res.smallList = &sl
	}
	if res.rssAfterLists, err = h.rssKiB(); err != nil {
		return res, fmt.Errorf("after lists: %w", err)
	}
	return res, nil
}
