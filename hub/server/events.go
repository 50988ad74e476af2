package server

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/wharfhub/wharf/hub/events"
	"github.com/wharfhub/wharf/hub/registry"
)

// installEvents serves core/v1 and events.k8s.io/v1 events, two views of
// the same stored objects with a lease of --event-ttl each, and prepares
// the broadcaster the hub's controllers record through.
func (h *Hub) installEvents(s *genericapiserver.GenericAPIServer, builtin map[schema.GroupVersion]map[string]rest.Storage, optsGetter generic.RESTOptionsGetter) error {
	st, err := registry.NewEventStorage(h.Extra.Scheme, optsGetter, h.Extra.EventTTL)
	if err != nil {
		return err
	}
	builtin[corev1.SchemeGroupVersion]["events"] = st.Core
	builtin[eventsv1.SchemeGroupVersion] = map[string]rest.Storage{"events": st.Events}
	h.Extra.Events, err = events.NewBroadcaster(h.Extra.Scheme, s.LoopbackClientConfig)
	return err
}
