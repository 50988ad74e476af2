package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// B-D, the ninth outside review's stall: TLS churn from the hub's own
// address. Every bench client is on 127.0.0.1 beside a hub on loopback,
// the hub's own address, where nothing before a handshake tells one
// client from another. The attacker's workers each open a new connection
// per request (a TLS handshake each, as a flood whose 429s close its
// connections must); the probe is the victim's GET on a new connection
// of its own, as a kubectl run makes. Under a rate of handshakes shared by
// the address, the probe waited behind the flood's backlog up to 5 s; now
// the address's handshakes take turns to compute, and it waits only for
// the work ahead of it.

func init() {
	attackByName["B-D"] = attack{name: "B-D", title: "a new TLS connection per request from 64 workers on the hub's own address; victim GETs on new connections (kubectl runs)",
		run: tlsChurn, probeName: "victim GET on a new connection", probe: probeFreshGet, cleanup: quiesce}
}

// freshClient is pp's client that opens a new connection (and TLS
// handshake) for every request.
func freshClient(pp *person) (*http.Client, error) {
	tlsConf, err := rest.TLSConfigFor(pp.cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS config of %s: %w", pp.name, err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true, ForceAttemptHTTP2: true}}, nil
}

// freshGet GETs url as pp on a new connection and returns the code.
func freshGet(ctx context.Context, c *http.Client, pp *person, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+pp.token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func tlsChurn(ctx context.Context, e *env, n *note) error {
	c, err := freshClient(e.attacker)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.cpuAttackTime)
	defer cancel()
	url := e.h.URL() + "/clusters/" + e.attacker.home + "/api/v1/namespaces/default/configmaps/missing"
	var codes countCodes
	var wg sync.WaitGroup
	t0 := time.Now()
	const workers = 64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				code, err := freshGet(ctx, c, e.attacker, url)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					code = 0
				}
				codes.add(code)
			}
		}()
	}
	wg.Wait()
	n.add("%d workers, a new connection per request: %s in %s", workers, codes.String(), time.Since(t0).Round(time.Second))
	return nil
}

func probeFreshGet(ctx context.Context, e *env) (time.Duration, error) {
	c, err := freshClient(e.victim)
	if err != nil {
		return 0, err
	}
	url := e.h.URL() + "/clusters/" + e.victim.home + "/api/v1/namespaces/default/configmaps?limit=1"
	t0 := time.Now()
	code, err := freshGet(ctx, c, e.victim, url)
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if code != http.StatusOK {
		return d, fmt.Errorf("victim GET on a new connection: %d", code)
	}
	return d, nil
}
