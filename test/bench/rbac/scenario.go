package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// phase is one pair of GET measurements: admin and alice, interleaved.
type phase struct {
	boundWorkspaces int // workspaces holding a binding for alice
	admin, alice    benchkit.Summary
}

// result is what one run measured.
type result struct {
	startup     time.Duration // hub start until /readyz ok
	wsCreate    time.Duration // creating and binding the extra workspaces
	rootStatus  int           // alice's GET of ConfigMaps in root, unbound
	few, many   phase
	targetPath  string // URL path of the ConfigMap every GET reads
	workspaces  int    // extra bound workspaces created
	targetSpace string
}

// runScenario starts a hub, binds alice in a target workspace, measures,
// adds p.workspaces-1 bound workspaces and measures again.
func runScenario(ctx context.Context, p params) (res result, err error) {
	benchkit.Progress("starting hub")
	t0 := time.Now()
	aliceToken := rand.Text()
	h, err := benchkit.StartHub(ctx, benchkit.Options{
		Bin:       p.Bin,
		DirPrefix: "wharf-bench-rbac-",
		TokenFile: aliceToken + `,alice,alice,"bench-users"` + "\n",
		QPS:       2000,
		Burst:     2000,
	})
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			err = h.Annotate(err)
		}
		benchkit.Progress("stopping hub")
		h.Stop()
	}()
	res.startup = time.Since(t0)

	benchkit.Progress("creating target workspace, binding alice to view, creating ConfigMap")
	target, err := boundWorkspaces(ctx, h, "target", 1, 1)
	if err != nil {
		return res, err
	}
	res.targetSpace = target[0]
	if res.targetPath, err = createTarget(ctx, h, target[0]); err != nil {
		return res, err
	}
	admin, err := newGetter("admin", h.Config(""), h.URL()+res.targetPath)
	if err != nil {
		return res, err
	}
	alice, err := newGetter("alice", h.ConfigWithToken("", aliceToken), h.URL()+res.targetPath)
	if err != nil {
		return res, err
	}
	if err := alice.waitAllowed(ctx); err != nil {
		return res, err
	}
	// Sanity: alice has no binding in root, so RBAC must deny her there.
	unbound, err := newGetter("alice", h.ConfigWithToken("", aliceToken), h.URL()+"/clusters/root/api/v1/namespaces/default/configmaps")
	if err != nil {
		return res, err
	}
	if res.rootStatus, err = unbound.get(ctx); err != nil {
		return res, err
	}
	if res.rootStatus != http.StatusForbidden {
		return res, fmt.Errorf("alice listing ConfigMaps in root: HTTP %d, want 403", res.rootStatus)
	}

	benchkit.Progress("measuring %d GETs each as admin and alice, 1 bound workspace", p.gets)
	if res.few, err = measurePhase(ctx, p.gets, 1, admin, alice); err != nil {
		return res, err
	}

	benchkit.Progress("creating %d workspaces, each with a ClusterRoleBinding for alice", p.workspaces-1)
	t0 = time.Now()
	wss, err := boundWorkspaces(ctx, h, "ws", p.workspaces-1, p.concurrency)
	if err != nil {
		return res, err
	}
	res.wsCreate = time.Since(t0)
	res.workspaces = len(wss)
	benchkit.Progress("created %d workspaces in %s", len(wss), res.wsCreate.Round(time.Millisecond))
	// The index must hold the new bindings before measuring: wait until
	// alice may list in the last workspace created.
	last, err := newGetter("alice", h.ConfigWithToken("", aliceToken), h.URL()+"/clusters/"+wss[len(wss)-1]+"/api/v1/namespaces/default/configmaps")
	if err != nil {
		return res, err
	}
	if err := last.waitAllowed(ctx); err != nil {
		return res, err
	}

	benchkit.Progress("measuring %d GETs each as admin and alice, %d bound workspaces", p.gets, 1+len(wss))
	if res.many, err = measurePhase(ctx, p.gets, 1+len(wss), admin, alice); err != nil {
		return res, err
	}
	return res, nil
}

func measurePhase(ctx context.Context, n, bound int, admin, alice *getter) (phase, error) {
	s, err := measureGets(ctx, n, admin, alice)
	if err != nil {
		return phase{}, fmt.Errorf("measure with %d bound workspaces: %w", bound, err)
	}
	return phase{boundWorkspaces: bound, admin: s[0], alice: s[1]}, nil
}
