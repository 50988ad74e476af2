// Package openapi holds the OpenAPI definitions of every kind the hub serves
// itself. They are generated (make generate) from k8s.io/api and the hub's
// own API types; server-side apply needs a schema for every served kind, and
// kubectl reads them for validation and explain.
package openapi
