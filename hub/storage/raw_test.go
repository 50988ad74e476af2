package storage

import (
	"reflect"
	"testing"

	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/utils/clock"
)

// The upstream decorators are recognised and replaced; others are kept.
func TestRetryingDecoratorReplacesUpstream(t *testing.T) {
	ptr := func(d generic.StorageDecorator) uintptr { return reflect.ValueOf(d).Pointer() }
	for name, d := range map[string]generic.StorageDecorator{
		"undecorated": generic.UndecoratedStorage,
		"cacher":      genericregistry.StorageWithCacher(),
	} {
		if got := retryingDecorator(d, clock.RealClock{}); ptr(got) == ptr(d) {
			t.Errorf("%s: not replaced", name)
		}
	}
	other := generic.StorageDecorator(Decorator(nil, Scoped))
	if got := retryingDecorator(other, clock.RealClock{}); ptr(got) != ptr(other) {
		t.Error("unknown decorator replaced")
	}
}
