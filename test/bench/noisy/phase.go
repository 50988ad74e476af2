package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// victimPause is the victim's pause between operations: a steady tenant,
// not a flood of its own.
const victimPause = 10 * time.Millisecond

// attack is one noisy neighbour. prepare builds its state (unmeasured,
// after the baseline); run attacks until its context ends (it may return
// earlier, which ends the measured window); probe, if set, is a timed
// operation of the victim's measured back to back at baseline and under
// attack; cleanup removes what the attacker made.
type attack struct {
	name, title string
	prepare     func(ctx context.Context, e *env, n *note) error
	run         func(ctx context.Context, e *env, n *note) error
	probeName   string
	probe       func(ctx context.Context, e *env) (time.Duration, error)
	cleanup     func(ctx context.Context, e *env, n *note) error
}

// note collects an attack's own figures for the report.
type note struct {
	mu    sync.Mutex
	parts []string
}

func (n *note) add(format string, args ...any) {
	n.mu.Lock()
	n.parts = append(n.parts, fmt.Sprintf(format, args...))
	n.mu.Unlock()
}

func (n *note) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.parts, "; ")
}

// phaseResult is what one attack did to the victim and the hub.
type phaseResult struct {
	name, title, detail   string
	base, under           loadStats
	probeName             string
	probeBase, probeUnder loadStats
	lease                 leaseStats
	store                 storeStats
	nospaceAfterCleanup   bool
	rssUnder, rssAfter    int64 // KiB
	fdsUnder              int
}

// binResult is one binary's whole run.
type binResult struct {
	label, bin       string
	quota            int64
	quotaSrc         string
	throughput       loadStats   // all rounds
	rounds           []loadStats // one per round
	tenants, workers int
	phases           []phaseResult
}

// startAll starts a hub for every binary; the caller stops them.
func startAll(ctx context.Context, p params, bins []labelledBin) ([]*env, error) {
	var envs []*env
	for _, b := range bins {
		benchkit.Progress("%s: starting hub %s", b.label, b.bin)
		e, err := startEnv(ctx, p, b.bin)
		if err != nil {
			for _, e := range envs {
				e.stop()
			}
			return nil, fmt.Errorf("%s (%s): %w", b.label, b.bin, err)
		}
		envs = append(envs, e)
	}
	// Let the edges providers take their leases and the hubs settle.
	sleep(ctx, 3*time.Second)
	return envs, nil
}

// measureThroughput runs the well-behaved tenants on every hub in
// alternating rounds (A B, B A, …), so a change in the shared machine's
// load falls on both binaries alike.
func measureThroughput(ctx context.Context, p params, envs []*env, res []binResult) {
	if p.warmup > 0 {
		for i := range envs {
			benchkit.Progress("%s: warm-up: %d well-behaved tenants x %d workers for %s, not measured", res[i].label, p.tenants, p.tenantWorkers, p.warmup)
			wctx, cancel := context.WithTimeout(ctx, p.warmup)
			steadyLoad(wctx, envs[i].tenants, p.tenantWorkers, 0, "warmup")
			cancel()
		}
	}
	for round := range p.rounds {
		for k := range envs {
			i := k
			if round%2 == 1 {
				i = len(envs) - 1 - k
			}
			benchkit.Progress("%s: throughput round %d/%d: %d well-behaved tenants x %d workers for %s", res[i].label, round+1, p.rounds, p.tenants, p.tenantWorkers, p.throughputFor)
			tctx, cancel := context.WithTimeout(ctx, p.throughputFor)
			prof := startProfile(ctx, p, envs[i].h, fmt.Sprintf("%s-round%d", res[i].label, round+1))
			cpu0, cpuErr := processCPU(envs[i].h.Pid())
			st := steadyLoad(tctx, envs[i].tenants, p.tenantWorkers, 0, fmt.Sprintf("tp%d", round))
			if cpu1, err := processCPU(envs[i].h.Pid()); err == nil && cpuErr == nil {
				st.cpu = cpu1 - cpu0
			}
			res[i].rounds = append(res[i].rounds, st)
			cancel()
			prof()
		}
	}
	for i := range res {
		res[i].throughput = merge(res[i].rounds)
	}
}

// runAttacks runs every chosen attack against e's hub.
func runAttacks(ctx context.Context, e *env, res *binResult) error {
	for _, name := range e.p.attackList() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a := attackByName[name]
		benchkit.Progress("%s: %s %s", res.label, a.name, a.title)
		r, err := runPhase(ctx, e, a)
		if err != nil {
			return e.h.Annotate(fmt.Errorf("%s: %w", a.name, err))
		}
		res.phases = append(res.phases, r)
	}
	return nil
}

// runPhase measures the victim at baseline, lets the attack prepare, then
// measures the victim again while the attack runs, and cleans up.
func runPhase(ctx context.Context, e *env, a attack) (phaseResult, error) {
	p := e.p
	r := phaseResult{name: a.name, title: a.title, probeName: a.probeName}
	n := &note{}
	mark := e.leases.mark(ctx)
	e.store.take(ctx) // starts the window

	bctx, cancel := context.WithTimeout(ctx, p.baseline)
	r.base, r.probeBase = measure(ctx, bctx, e, a)
	cancel()

	if a.prepare != nil {
		pctx, cancel := context.WithTimeout(ctx, 3*p.attackTime)
		err := a.prepare(pctx, e, n)
		cancel()
		if err != nil && ctx.Err() != nil {
			return r, err
		}
		if err != nil {
			n.add("prepare stopped: %v", trim(err))
		}
	}

	window, endWindow := context.WithTimeout(ctx, p.attackTime)
	actx, stopAttack := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.run(actx, e, n); err != nil && actx.Err() == nil {
			n.add("attack stopped: %v", trim(err))
		}
		endWindow()
	}()
	r.under, r.probeUnder = measure(ctx, window, e, a)
	r.rssUnder, _ = e.h.RSSKiB()
	r.fdsUnder = countFDs(e.h.Pid())
	stopAttack()
	<-done
	endWindow()
	r.store = e.store.take(ctx)

	if a.cleanup != nil {
		cctx, cancel := context.WithTimeout(ctx, 3*p.attackTime)
		if err := a.cleanup(cctx, e, n); err != nil {
			n.add("cleanup: %v", trim(err))
		}
		cancel()
		sctx, cancel := context.WithTimeout(ctx, 3*p.attackTime)
		settle(sctx, e, n)
		cancel()
	}
	r.nospaceAfterCleanup = e.store.alarmNow(ctx)
	if r.nospaceAfterCleanup {
		recoverStore(ctx, e, n)
	}
	// Lease figures include the cleanup: a provider stopped by the attack
	// may come back only after it.
	r.lease = e.leases.since(ctx, mark)
	r.rssAfter, _ = e.h.RSSKiB()
	r.detail = n.String()
	return r, ctx.Err()
}

// measure runs the victim's steady mix and, if the attack has one, its
// probe until window ends.
func measure(parent, window context.Context, e *env, a attack) (mix, probe loadStats) {
	var wg sync.WaitGroup
	if a.probe != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probe = probeLoop(parent, window, 2*e.p.attackTime, func(ctx context.Context) (time.Duration, error) { return a.probe(ctx, e) })
		}()
	}
	mix = steadyLoad(window, []*person{e.victim}, e.p.victimWorkers, victimPause, "mix")
	wg.Wait()
	return mix, probe
}

// recoverStore gives the hub 30 s to clear a NOSPACE alarm that outlived
// the cleanup, then clears it itself so later attacks meet a working store.
func recoverStore(ctx context.Context, e *env, n *note) {
	t0 := time.Now()
	for time.Since(t0) < 30*time.Second && ctx.Err() == nil {
		if !e.store.alarmNow(ctx) {
			n.add("NOSPACE cleared by the hub %s after cleanup", time.Since(t0).Round(time.Second))
			return
		}
		sleep(ctx, time.Second)
	}
	if err := e.store.disarm(ctx); err != nil {
		n.add("NOSPACE still armed 30 s after cleanup; the benchmark could not clear it: %v", trim(err))
		return
	}
	n.add("NOSPACE still armed 30 s after cleanup; the benchmark compacted, defragmented and disarmed it")
}

// processCPU is pid's user and system CPU time so far (/proc/<pid>/stat,
// in USER_HZ ticks, 100 a second on Linux).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from the
	// last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] { // utime, stime: fields 14 and 15
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

func countFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// trim shortens an error for the one-line notes.
func trim(err error) string {
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
