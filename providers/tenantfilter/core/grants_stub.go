package core

// Temporary stand-ins for the grants engine's route handlers (tf-rules
// replaces this file with clusterscoped*.go, reviews*.go and nodes*.go).
// Each declines, so the router goes on and finally forwards impersonated.

import (
	"net/http"

	"k8s.io/apiserver/pkg/endpoints/request"
)

func (c *Core) serveClusterScoped(http.ResponseWriter, *http.Request, Caller, *request.RequestInfo) bool {
	return false
}

func (c *Core) serveAccessReview(http.ResponseWriter, *http.Request, Caller, *request.RequestInfo) bool {
	return false
}

func (c *Core) serveNodeDescribe(http.ResponseWriter, *http.Request, Caller, *request.RequestInfo) bool {
	return false
}
