package storage

import (
	"maps"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// slimmer shrinks the object of a DELETED event before the watch cache
// stores it in its event history.
//
// For a DELETED event upstream's cache keeps two copies of the deleted
// object: the event's Object (etcd's previous value, decoded once more)
// and its PrevObject (the object the cache held). Only PrevObject is ever
// sent to a watcher (cacheWatcher.convertToWatchEvent: a deleted object
// never "currently passes" a filter; setCachingObjects wraps only
// PrevObject of a delete). Object serves the cache to compute the key,
// the labels and fields, and the trigger values. So the hub hands the
// cache that object without the fields whose absence changes none of the
// key, labels, fields and trigger values (for a ConfigMap: all but its
// type and metadata). A burst of large deletes then costs the history one copy,
// not two.
type slimmer struct {
	keyFunc  func(runtime.Object) (string, error)
	getAttrs storage.AttrFunc
	triggers storage.IndexerFuncs
}

// slim returns the object to put in a DELETED event.
func (s slimmer) slim(obj runtime.Object) runtime.Object {
	if s.keyFunc == nil || s.getAttrs == nil {
		return obj
	}
	if t, ok := obj.(storage.WatchEventWithRecordTime); ok {
		inner := s.slim(t.Unwrap())
		if inner == t.Unwrap() {
			return obj
		}
		return &timedObject{Object: inner, at: t.RecordTime()}
	}
	if small := s.without(obj); small != nil {
		return small
	}
	return obj
}

// kept are what every object keeps: its type and object metadata.
var kept = map[string]bool{"TypeMeta": true, "ObjectMeta": true, "apiVersion": true, "kind": true, "metadata": true}

// without is a shallow copy of obj with every other top-level field
// emptied whose absence the cache cannot tell (alike), or nil when none
// could be emptied. Emptying one field at a time keeps a field a
// selector or trigger reads (a Secret's type, a custom resource's
// selectable field), whatever the resource.
func (s slimmer) without(obj runtime.Object) runtime.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		small := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
		emptied := false
		for k, v := range u.Object {
			if kept[k] {
				continue
			}
			delete(small.Object, k)
			if s.alike(obj, small) {
				emptied = true
			} else {
				small.Object[k] = v
			}
		}
		if !emptied {
			return nil
		}
		return small
	}
	src := reflect.ValueOf(obj)
	if src.Kind() != reflect.Pointer || src.Elem().Kind() != reflect.Struct {
		return nil
	}
	dst := reflect.New(src.Elem().Type())
	dst.Elem().Set(src.Elem())
	small, ok := dst.Interface().(runtime.Object)
	if !ok {
		return nil
	}
	emptied := false
	for i := 0; i < dst.Elem().NumField(); i++ {
		f := dst.Elem().Field(i)
		name := dst.Elem().Type().Field(i).Name
		if kept[name] || !f.CanSet() || f.IsZero() {
			continue
		}
		saved := reflect.New(f.Type()).Elem()
		saved.Set(f)
		f.Set(reflect.Zero(f.Type()))
		if s.alike(obj, small) {
			emptied = true
		} else {
			f.Set(saved)
		}
	}
	if !emptied {
		return nil
	}
	return small
}

// alike reports whether the cache would key, select and trigger the two
// objects alike.
func (s slimmer) alike(whole, small runtime.Object) bool {
	wk, err1 := s.keyFunc(whole)
	sk, err2 := s.keyFunc(small)
	if err1 != nil || err2 != nil || wk != sk {
		return false
	}
	wl, wf, err1 := s.getAttrs(whole)
	sl, sf, err2 := s.getAttrs(small)
	if err1 != nil || err2 != nil || !maps.Equal(wl, sl) || !maps.Equal(wf, sf) {
		return false
	}
	for _, f := range s.triggers {
		if f(whole) != f(small) {
			return false
		}
	}
	return true
}

// timedObject carries the decode time of a watch event, as the etcd3
// store's own wrapper does (storage.WatchEventWithRecordTime), around a
// slimmed object.
type timedObject struct {
	runtime.Object
	at time.Time
}

var _ storage.WatchEventWithRecordTime = &timedObject{}

func (t *timedObject) RecordTime() time.Time  { return t.at }
func (t *timedObject) Unwrap() runtime.Object { return t.Object }
func (t *timedObject) DeepCopyObject() runtime.Object {
	return &timedObject{Object: t.Object.DeepCopyObject(), at: t.at}
}

// GetObjectMeta lets the reflector read the resource version through it.
func (t *timedObject) GetObjectMeta() metav1.Object {
	m, _ := meta.Accessor(t.Object)
	return m
}
