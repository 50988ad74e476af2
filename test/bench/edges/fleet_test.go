package edgesbench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// runFleet creates n kubernetes edges, joins each with its own token and
// credential, connects one revdial.Client per edge from this process, and
// measures the provider and the hub while the tunnels sit idle for idle.
// It closes every tunnel before returning.
func runFleet(ctx context.Context, e *env, n int, idle, baseline time.Duration) (*Fleet, error) {
	f := &Fleet{Edges: n}
	provider, err := e.providerPid(ctx)
	if err != nil {
		return nil, err
	}
	if f.RSSEmptyKiB, err = RSSKiB(provider); err != nil {
		return nil, err
	}
	benchkit.Progress("fleet: creating and joining %d edges (at most %s)", n, joinBudget)
	names, creds, err := e.joinFleet(ctx, n, f)
	if err != nil {
		return nil, err
	}
	n = len(names)
	if f.RSSJoinedKiB, err = RSSKiB(provider); err != nil {
		return nil, err
	}
	if f.HubRSSJoinedKiB, err = RSSKiB(e.hub.Pid()); err != nil {
		return nil, err
	}

	// The same window with every edge joined and no tunnel up, so the
	// fleet's own cost stands beside what the hub and provider spend
	// anyway.
	// The provider may still be writing the joins' statuses (it works
	// through a queue): wait until the Edges have been quiet for a while.
	benchkit.Progress("fleet: waiting for the Edge objects to be quiet (at most %s)", quietMax)
	if f.QuietWait, err = e.waitQuiet(ctx, 5*time.Second, quietMax); err != nil {
		return nil, err
	}
	benchkit.Progress("fleet: baseline idle window of %s, no tunnel up", baseline)
	if f.Baseline, err = e.window(ctx, provider, baseline); err != nil {
		return nil, err
	}
	benchkit.Progress("fleet: connecting %d tunnels", n)
	fctx, stopFleet := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopFleet(); wg.Wait() }()
	var up atomic.Int64
	allUp := make(chan struct{})
	var once sync.Once
	start := time.Now()
	var firstErr atomic.Value
	for i := range n {
		cl, err := e.simAgent(names[i], creds[i], func(connected bool, err error) {
			if connected {
				if up.Add(1) == int64(n) {
					once.Do(func() { close(allUp) })
				}
				return
			}
			if err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
			}
		})
		if err != nil {
			return nil, err
		}
		wg.Add(2)
		go func() { defer wg.Done(); _ = cl.Run(fctx) }()
		go func() { // an idle edge: nothing is dialed, anything that is gets closed
			defer wg.Done()
			for {
				c, err := cl.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	select {
	case <-allUp:
		f.ConnectTime = time.Since(start)
	case <-time.After(3 * time.Minute):
		return nil, fmt.Errorf("fleet: %d of %d tunnels up after 3m (first error: %v)", up.Load(), n, firstErr.Load())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.Connected = int(up.Load())
	benchkit.Progress("fleet: %d tunnels up in %s; waiting for the edges to be Ready", f.Connected, f.ConnectTime.Round(time.Millisecond))
	// Ready is the provider's status, written asynchronously; wait for it
	// but report the count if it never gets there.
	readyStart := time.Now()
	for deadline := readyStart.Add(90 * time.Second); time.Now().Before(deadline); {
		if r, err := e.countReady(ctx, "sim-"); err == nil {
			if f.Ready = r; r >= n {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second): // a list of every edge: not too often
		}
	}
	f.ReadyTime = time.Since(readyStart)
	// Let the status writes of the connects drain before the window.
	time.Sleep(5 * time.Second)

	benchkit.Progress("fleet: idle window of %s with %d tunnels up (CPU and etcd writes)", idle, f.Connected)
	if f.Loaded, err = e.window(ctx, provider, idle); err != nil {
		return nil, err
	}
	if f.RSSConnectedKiB, err = RSSKiB(provider); err != nil {
		return nil, err
	}
	if f.HubRSSKiB, err = RSSKiB(e.hub.Pid()); err != nil {
		return nil, err
	}
	if d := int(up.Load()); d != f.Connected {
		benchkit.Progress("fleet: %d tunnels dropped during the window", f.Connected-d)
	}
	return f, nil
}

// joinBudget bounds the create-and-join phase, so the benchmark's run time
// stays bounded when the provider joins slowly; the fleet is then the
// edges joined by then, and the report says so.
const joinBudget = 100 * time.Second

// joinFleet creates edges sim-0000… and joins each with its own token and
// credential, on 16 workers, until n are joined or joinBudget passes. It
// returns the joined edges' names and credentials and sets f.Joined,
// f.JoinTime.
func (e *env) joinFleet(ctx context.Context, n int, f *Fleet) (names, creds []string, err error) {
	// Agents join with no hub credential: a client that trusts the hub CA
	// and nothing more.
	agentHTTP := &http.Client{Transport: &http.Transport{TLSClientConfig: e.tls.Clone(), MaxIdleConnsPerHost: 16}, Timeout: time.Minute}
	defer agentHTTP.CloseIdleConnections()
	jctx, cancel := context.WithTimeout(ctx, joinBudget)
	defer cancel()
	var (
		steps [3]atomic.Int64
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				name := fmt.Sprintf("sim-%04d", i)
				cred, err := e.createAndJoin(jctx, agentHTTP, name, &steps)
				mu.Lock()
				if err == nil {
					names, creds = append(names, name), append(creds, cred)
				} else if first == nil && jctx.Err() == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f.JoinTime, f.Joined = time.Since(start), len(names)
	if len(names) > 0 {
		for i := range steps {
			f.JoinSteps[i] = time.Duration(steps[i].Load() / int64(len(names)))
		}
	}
	if first != nil {
		return nil, nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("fleet: no edge joined within %s", joinBudget)
	}
	return names, creds, nil
}

// createAndJoin creates, mints and joins one edge, adding each step's
// time to steps (create, join-token, join), so the report can say which
// step bounds the join rate.
func (e *env) createAndJoin(ctx context.Context, agentHTTP *http.Client, name string, steps *[3]atomic.Int64) (string, error) {
	t0 := time.Now()
	if err := e.createEdge(ctx, name, v1alpha1.TypeKubernetes); err != nil {
		return "", err
	}
	t1 := time.Now()
	tok, err := e.joinToken(ctx, name)
	if err != nil {
		return "", err
	}
	t2 := time.Now()
	cred, err := e.join(ctx, agentHTTP, name, tok)
	steps[0].Add(int64(t1.Sub(t0)))
	steps[1].Add(int64(t2.Sub(t1)))
	steps[2].Add(int64(time.Since(t2)))
	return cred, err
}

// simAgent is one simulated agent: a revdial.Client on the edge's control
// path with its own credential, as wharf-agent would connect. The
// credential goes on the control handshake only (pickups are authorized by
// their token), and a rotated one from the 101 replaces it, as the agent
// saves it, so a reconnect during the bench presents the current one.
func (e *env) simAgent(name, cred string, onState func(bool, error)) (*revdial.Client, error) {
	u := "wss://" + strings.TrimPrefix(e.backend(protocol.AgentBase(e.cluster, name)+"/proxy"), "https://")
	var mu sync.Mutex
	current := cred
	return revdial.NewClient(revdial.ClientConfig{
		URL: u,
		ControlHeader: func(context.Context) (http.Header, error) {
			hdr := http.Header{}
			mu.Lock()
			hdr.Set("Authorization", "Bearer "+current)
			mu.Unlock()
			hdr.Set(protocol.HeaderAgentVersion, "bench-sim")
			hdr.Set(protocol.HeaderAgentType, string(v1alpha1.TypeKubernetes))
			hdr.Set(protocol.HeaderAgentHostname, name)
			return hdr, nil
		},
		OnConnect: func(resp *http.Response) error {
			if c := resp.Header.Get(protocol.HeaderRotatedCredential); c != "" {
				mu.Lock()
				current = c
				mu.Unlock()
			}
			return nil
		},
		TLSConfig: e.tls.Clone(),
		OnState:   onState,
	})
}

// providerPid finds the edges provider's process: the hub's child running
// wharf-provider-edges. The hub starts it once the hub is ready, and again
// after a crash, so it is looked up, not remembered from the start.
func (e *env) providerPid(ctx context.Context) (int, error) {
	var pid int
	err := retry(ctx, time.Minute, func() error {
		if pid = ChildRunning(e.hub.Pid(), "wharf-provider-edges"); pid == 0 {
			return fmt.Errorf("no wharf-provider-edges child of the hub (pid %d)", e.hub.Pid())
		}
		return nil
	})
	return pid, err
}
