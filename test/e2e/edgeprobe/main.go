// Command edgeprobe is a provider plugin for the edges end-to-end tests.
// Its catalog entry sets edgeProxyAccess, so in every workspace that
// enables it the hub grants it the proxy verb on edges there, and nothing
// else. Both endpoints act with the probe's OWN identity (the hub-issued
// provider credential), never the caller's, and report exactly what the
// hub answered, with the same status code and body:
//
//   - GET /probe?cluster=<id>&edge=<name>&path=<api path> calls
//     <hub>/services/providers/edges + EgressBase(cluster, edge) + "/k8s" +
//     path with X-Wharf-Workspace: <cluster>: the way a provider opens
//     background connections to a workspace's edges. Enabled where the
//     probe is granted it reaches the edge; elsewhere the hub or the edges
//     provider answers 403.
//   - GET /hub?cluster=<id>&path=<api path> calls
//     <hub>/clusters/<cluster><path>, to show that the grant opens no other
//     way in (no Edges, no Secrets, no other provider's data).
//
// The probe deliberately does not restrict its callers: the tests must see
// the hub's and the edges provider's refusals, not the probe's. It is a
// test fixture and must never ship.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/sdk"
)

// HeaderUpstream on every probe answer is the status code the hub gave the
// probe ("none" when the request never got an answer). The probe answers
// with that same code and body.
const HeaderUpstream = "X-Edgeprobe-Upstream-Code"

type probe struct {
	// Set by Start, before the hub sends any request.
	hubURL string
	client *http.Client
}

func (p *probe) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /probe", p.probeEdge)
	mux.HandleFunc("GET /hub", p.probeHub)
	return sdk.Manifest{Name: "edgeprobe", DisplayName: "Edge probe", Version: "v0.0.1",
		Description: "Test fixture: reaches edges with its own identity.", Backend: mux, EdgeProxyAccess: true}
}

func (p *probe) Start(_ context.Context, hc sdk.HubConfig) error {
	if hc.RestConfig == nil || hc.HubURL == "" {
		return errors.New("edgeprobe: the hub gave no credentials")
	}
	c, err := rest.HTTPClientFor(hc.RestConfig)
	if err != nil {
		return fmt.Errorf("edgeprobe: %w", err)
	}
	c.Timeout = 60 * time.Second
	p.hubURL, p.client = strings.TrimSuffix(hc.HubURL, "/"), c
	return nil
}

func (p *probe) probeEdge(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cluster, edge, path := q.Get("cluster"), q.Get("edge"), q.Get("path")
	if cluster == "" || edge == "" || !strings.HasPrefix(path, "/") {
		http.Error(w, "cluster, edge and path (/...) are required", http.StatusBadRequest)
		return
	}
	u := p.hubURL + protocol.BackendPrefix + protocol.EgressBase(url.PathEscape(cluster), url.PathEscape(edge)) + "/k8s" + path
	p.report(r.Context(), w, u, cluster)
}

func (p *probe) probeHub(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cluster, path := q.Get("cluster"), q.Get("path")
	if cluster == "" || !strings.HasPrefix(path, "/") {
		http.Error(w, "cluster and path (/...) are required", http.StatusBadRequest)
		return
	}
	p.report(r.Context(), w, p.hubURL+"/clusters/"+url.PathEscape(cluster)+path, "")
}

// report performs one GET as the probe and writes back what came back.
func (p *probe) report(ctx context.Context, w http.ResponseWriter, u, workspace string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Header.Set("Accept", "application/json")
	if workspace != "" {
		// The backend proxy takes the active workspace from this header
		// and checks that the probe may access it.
		req.Header.Set("X-Wharf-Workspace", workspace)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// Not the hub's answer: say so, so a test never mistakes it for one.
		w.Header().Set(HeaderUpstream, "none")
		http.Error(w, "edgeprobe: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set(HeaderUpstream, strconv.Itoa(resp.StatusCode))
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 4<<20))
}

func main() { sdk.Serve(&probe{}) }
