// Package events records the events of the hub's own controllers into the
// workspace each one acts on.
//
// Upstream controllers record through client-go's record.EventBroadcaster
// into the one cluster they run against. The hub's controllers act on every
// workspace, so the recorder here tags each event with the logical cluster
// it belongs to (the wharf.dev/cluster annotation, which the storage sets on
// every stored object anyway) and the sink writes it through the hub's
// loopback client at /clusters/<cluster>. An event therefore takes the same
// path as a client's: admission, validation, its TTL lease, and it lands
// in that workspace only.
//
// Threat model: nothing here is reachable by a client. The cluster comes
// from the controller's own call, never from stored data, and an event
// without a cluster is dropped rather than written anywhere.
package events
