package quota

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// UsagePath answers, in a workspace (/clusters/<ws>/api/usage), what the
// workspace and its tenant store against their ceilings. It is behind
// authentication and authorization, and, since every person may get
// /api/* in root for discovery, answers only whoever may also list
// resourcequotas in the workspace: who may read its quotas may read its
// usage (its admins), and root's usage stays with hub admins.
const UsagePath = "/api/usage"

// Report is the answer of GET /clusters/<ws>/api/usage.
type Report struct {
	Workspace Scope `json:"workspace"`
	Tenant    Scope `json:"tenant"`
}

// Scope is one usage record with the ceilings that bound it (0: none).
type Scope struct {
	Name   string `json:"name"`
	Used   Usage  `json:"used"`
	Limits Usage  `json:"limits"`
}

// WithUsage serves UsagePath in front of delegate; wrap it inside the
// chain's authorization and workspace resolution. It also gives every
// write request the place where its write is measured once
// (writesize.go).
func (a *Accountant) WithUsage(delegate http.Handler, s runtime.NegotiatedSerializer, authz authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != UsagePath {
			if isWrite(r.Method) {
				r = r.WithContext(context.WithValue(r.Context(), writeSizesKey{}, &writeSizes{a: a}))
			}
			delegate.ServeHTTP(w, r)
			return
		}
		fail := func(err error) { responsewriters.ErrorNegotiated(err, s, schemaless, w, r) }
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			fail(apierrors.NewMethodNotSupported(usageResource, r.Method))
			return
		}
		id, ok := cluster.From(r.Context())
		if !ok {
			fail(apierrors.NewBadRequest("usage is reported per workspace: /clusters/<workspace>" + UsagePath))
			return
		}
		u, _ := request.UserFrom(r.Context())
		decision, _, err := authz.Authorize(r.Context(), authorizer.AttributesRecord{
			User: u, Verb: "list", APIVersion: "v1", Resource: "resourcequotas", ResourceRequest: true,
		})
		if err != nil || decision != authorizer.DecisionAllow {
			fail(apierrors.NewForbidden(usageResource, "", errors.New("reading usage requires listing resourcequotas in the workspace")))
			return
		}
		tenant, wsLim, tenLim, err := a.Resolver.Limits(r.Context(), id)
		if err != nil {
			fail(apierrors.NewInternalError(errors.New("resolving the workspace")))
			return
		}
		ws, ten, err := a.Ledger.Get(r.Context(), id, tenant)
		if err != nil {
			fail(apierrors.NewInternalError(errors.New("reading stored usage")))
			return
		}
		out := Report{
			Workspace: Scope{Name: string(id), Used: ws, Limits: Usage(wsLim)},
			Tenant:    Scope{Name: tenant, Used: ten, Limits: Usage(tenLim)},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

var (
	usageResource = schema.GroupResource{Resource: "usage"}
	schemaless    = schema.GroupVersion{Version: "v1"}
)
