package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/selectors"
)

const handoffCluster = cluster.ID("0123456789abcdef")

// storageCodecs are the codecs a ConfigMap may be stored with: JSON (the
// default storage media type) and protobuf.
func storageCodecs(t *testing.T) map[string]runtime.Codec {
	t.Helper()
	s := scheme.New()
	codecs := serializer.NewCodecFactory(s)
	out := map[string]runtime.Codec{}
	for _, mt := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
		if !ok {
			t.Fatalf("no serializer for %s", mt)
		}
		out[mt] = codecs.CodecForVersions(info.Serializer, info.Serializer, corev1.SchemeGroupVersion, runtime.InternalGroupVersioner)
	}
	return out
}

func handoffConfigMap(name string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations, Labels: map[string]string{"a": "b"}},
		Data:       map[string]string{"k": "v"},
	}
}

func configMapGuard(codec runtime.Codec) *keyGuard {
	return newKeyGuard(nil, codec, "/registry", schema.GroupResource{Resource: "configmaps"}, "/core/configmaps", Scoped,
		func() runtime.Object { return &corev1.ConfigMap{} },
		func(obj runtime.Object) (string, error) {
			m := obj.(*corev1.ConfigMap)
			return "/core/configmaps/" + m.Namespace + "/" + m.Name, nil
		})
}

// read is what the etcd3 store does with a value: transform, then decode
// the returned bytes with its codec, into a new object (get, update, list)
// or into none (watch events).
func read(t *testing.T, g *keyGuard, key string, stored []byte, into runtime.Object) (runtime.Object, []byte) {
	t.Helper()
	plain, _, err := g.TransformFromStorage(context.Background(), stored, value.DefaultContext("/registry"+key))
	if err != nil {
		t.Fatalf("transform %s: %v", key, err)
	}
	obj, _, err := g.Codec().Decode(plain, nil, into)
	if err != nil {
		t.Fatalf("decode %s: %v", key, err)
	}
	return obj, plain
}

// The store's decode after the guard yields exactly what decoding the
// bytes yields, for both storage encodings and both kinds of decode,
// whether or not the hand-off hits.
func TestHandoffDecodesAlike(t *testing.T) {
	for mt, codec := range storageCodecs(t) {
		key := "/core/configmaps/" + string(handoffCluster) + "/default/cm"
		stored, err := runtime.Encode(codec, handoffConfigMap("cm", map[string]string{ClusterAnnotation: string(handoffCluster)}))
		if err != nil {
			t.Fatal(err)
		}
		for _, into := range []func() runtime.Object{func() runtime.Object { return nil }, func() runtime.Object { return &corev1.ConfigMap{} }} {
			want, _, err := codec.Decode(stored, nil, into())
			if err != nil {
				t.Fatal(err)
			}
			g := configMapGuard(codec)
			// The first decode into no object is done in full (it learns
			// the kind such decodes leave); later ones are handed.
			var got runtime.Object
			var plain []byte
			for i := range 3 {
				got, plain = read(t, g, key, stored, into())
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, into %T, read %d: hand-off gave\n%#v\nwant\n%#v", mt, into(), i, got, want)
				}
				if len(g.handoff.entries) != 0 {
					t.Errorf("%s, into %T: the store's decode did not take the checked object", mt, into())
				}
			}
			if _, ok := g.handoff.nilKind(reflect.TypeOf(&corev1.ConfigMap{})); !ok && into() == nil {
				t.Errorf("%s: the kind of decodes into no object was not learned", mt)
			}
			// A second decode of the same bytes misses and decodes.
			again, _, err := g.Codec().Decode(plain, nil, into())
			if err != nil || !reflect.DeepEqual(again, want) {
				t.Errorf("%s: decode after the hand-off: %v %#v", mt, err, again)
			}
			if got == again {
				t.Errorf("%s: one checked object handed out twice", mt)
			}
		}
	}
}

// A refused value is never handed on: the store decodes the quarantine
// stand-in, as before.
func TestHandoffNeverHandsRefusedValues(t *testing.T) {
	codec := storageCodecs(t)[runtime.ContentTypeJSON]
	g := configMapGuard(codec)
	other := cluster.ID("fedcba9876543210")
	stored, err := runtime.Encode(codec, handoffConfigMap("moved", map[string]string{ClusterAnnotation: string(other)}))
	if err != nil {
		t.Fatal(err)
	}
	key := "/core/configmaps/" + string(handoffCluster) + "/default/moved"
	obj, _ := read(t, g, key, stored, &corev1.ConfigMap{})
	if q, ok := quarantinedKey(obj); !ok || q != key {
		t.Errorf("refused value decoded as %#v, want the stand-in for %s", obj, key)
	}
	if len(g.handoff.entries) != 0 {
		t.Errorf("hand-off holds %d entries after a refused value", len(g.handoff.entries))
	}
}

// The hand-off matches the bytes' own slice only, and stays bounded.
func TestHandoffBounds(t *testing.T) {
	obj := &corev1.ConfigMap{}
	for _, tc := range []struct {
		name string
		run  func(h *handoff) error
	}{
		{"a copy of the bytes misses", func(h *handoff) error {
			data := []byte("value")
			h.put(data, obj, nil)
			if _, ok := h.take(bytes.Clone(data)); ok {
				return fmt.Errorf("copy hit")
			}
			if _, ok := h.take(data); !ok {
				return fmt.Errorf("original missed")
			}
			return nil
		}},
		{"a shorter slice of the same bytes misses", func(h *handoff) error {
			data := []byte("value")
			h.put(data, obj, nil)
			if _, ok := h.take(data[:2]); ok {
				return fmt.Errorf("prefix hit")
			}
			return nil
		}},
		{"taken once", func(h *handoff) error {
			data := []byte("value")
			h.put(data, obj, nil)
			h.take(data)
			if _, ok := h.take(data); ok {
				return fmt.Errorf("second take hit")
			}
			return nil
		}},
		{"large values are not held", func(h *handoff) error {
			data := make([]byte, handoffMaxValue+1)
			h.put(data, obj, nil)
			if _, ok := h.take(data); ok {
				return fmt.Errorf("large value held")
			}
			return nil
		}},
		{"unstructured objects are not held", func(h *handoff) error {
			data := []byte("{}")
			h.put(data, &unstructured.Unstructured{}, nil)
			if _, ok := h.take(data); ok {
				return fmt.Errorf("unstructured held")
			}
			return nil
		}},
		{"oldest evicted by count", func(h *handoff) error {
			all := make([][]byte, handoffEntries+10)
			for i := range all {
				all[i] = []byte{byte(i), 1}
				h.put(all[i], obj, nil)
			}
			if len(h.entries) != handoffEntries {
				return fmt.Errorf("%d entries held, want %d", len(h.entries), handoffEntries)
			}
			if _, ok := h.take(all[0]); ok {
				return fmt.Errorf("oldest still held")
			}
			if _, ok := h.take(all[len(all)-1]); !ok {
				return fmt.Errorf("newest evicted")
			}
			return nil
		}},
		{"oldest evicted by bytes", func(h *handoff) error {
			var all [][]byte
			for range 3 * handoffMaxBytes / handoffMaxValue {
				b := make([]byte, handoffMaxValue)
				all = append(all, b)
				h.put(b, obj, nil)
				if h.bytes > handoffMaxBytes {
					return fmt.Errorf("%d bytes held, bound %d", h.bytes, handoffMaxBytes)
				}
			}
			if _, ok := h.take(all[len(all)-1]); !ok {
				return fmt.Errorf("newest evicted")
			}
			if _, ok := h.take(all[0]); ok {
				return fmt.Errorf("oldest still held")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(&handoff{}); err != nil {
				t.Error(err)
			}
		})
	}
}

// A request that has ended decodes nothing more: its read fails with the
// context's error, is not quarantined, and adds nothing to its Scan.
func TestGuardStopsOnAnEndedRequest(t *testing.T) {
	codec := storageCodecs(t)[runtime.ContentTypeJSON]
	g := configMapGuard(codec)
	var stored bytes.Buffer
	if err := codec.Encode(handoffConfigMap("x", map[string]string{ClusterAnnotation: string(handoffCluster)}), &stored); err != nil {
		t.Fatal(err)
	}
	key := "/core/configmaps/" + string(handoffCluster) + "/default/x"
	scan := &selectors.Scan{}
	ctx, cancel := context.WithCancel(selectors.WithScan(context.Background(), scan))
	if _, _, err := g.TransformFromStorage(ctx, stored.Bytes(), value.DefaultContext("/registry"+key)); err != nil {
		t.Fatalf("a live request's read: %v", err)
	}
	read := scan.Read()
	if read != int64(stored.Len()) {
		t.Errorf("the Scan counted %d bytes read, want %d", read, stored.Len())
	}
	cancel()
	plain, _, err := g.TransformFromStorage(ctx, stored.Bytes(), value.DefaultContext("/registry"+key))
	if !errors.Is(err, context.Canceled) || plain != nil {
		t.Errorf("an ended request's read: %q, %v; want context.Canceled", plain, err)
	}
	if scan.Read() != read {
		t.Errorf("an ended request's read added %d bytes to its Scan", scan.Read()-read)
	}
}
