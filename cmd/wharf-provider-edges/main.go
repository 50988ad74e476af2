// Command wharf-provider-edges is the edges provider plugin (package
// providers/edges); the hub starts it from its provider directory.
package main

import (
	"github.com/wharfhub/wharf/providers/edges"
	"github.com/wharfhub/wharf/sdk"
)

func main() { sdk.Serve(edges.New(edges.Options{})) }
