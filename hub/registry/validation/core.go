package validation

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// immutableWhenSet is upstream's message for a change to an object marked
// `immutable: true` (ConfigMaps and Secrets).
const immutableWhenSet = "field is immutable when `immutable` is set"

// redacted stands in for a Secret's bad value in an error, as upstream.
const redacted = "<secret contents redacted>"

// ConfigMap validates a ConfigMap's data as ValidateConfigMap upstream:
// keys are ConfigMap keys, data and binaryData share no key, and the
// values total at most 1 MiB.
func ConfigMap(obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	var errs field.ErrorList
	size := 0
	dataPath, binPath := field.NewPath("data"), field.NewPath("binaryData")
	for k, v := range cm.Data {
		errs = append(errs, configMapKey(dataPath, k)...)
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, "duplicate of key present in binaryData"))
		}
		size += len(v)
	}
	for k, v := range cm.BinaryData {
		errs = append(errs, configMapKey(binPath, k)...)
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		// Upstream names no field: the limit is on the whole object.
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

// ConfigMapUpdate adds what only an update can break: once immutable, a
// ConfigMap keeps its data, its binaryData and the flag itself.
func ConfigMapUpdate(obj, old runtime.Object) field.ErrorList {
	n, o := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	if !isTrue(o.Immutable) {
		return nil
	}
	var errs field.ErrorList
	if !isTrue(n.Immutable) {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSet))
	}
	if !reflect.DeepEqual(n.Data, o.Data) {
		errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSet))
	}
	if !reflect.DeepEqual(n.BinaryData, o.BinaryData) {
		errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableWhenSet))
	}
	return errs
}

// Secret validates a Secret as ValidateSecret upstream: key names, the
// 1 MiB limit, and the keys each well-known type requires. It runs after
// stringData was folded into data, as upstream's conversion does.
func Secret(obj runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	size := 0
	for k, v := range s.Data {
		errs = append(errs, configMapKey(dataPath, k)...)
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	return append(errs, secretType(s, dataPath)...)
}

// secretType checks the keys a well-known Secret type requires.
func secretType(s *corev1.Secret, dataPath *field.Path) field.ErrorList {
	has := func(k string) bool { _, ok := s.Data[k]; return ok }
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the name: a token controller fills in the uid and token.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			return field.ErrorList{field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), "")}
		}
	case corev1.SecretTypeDockercfg:
		return jsonKey(s, dataPath, corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		return jsonKey(s, dataPath, corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but one of them must be there.
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			return field.ErrorList{
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""),
			}
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			return field.ErrorList{field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), "")}
		}
	case corev1.SecretTypeTLS:
		var errs field.ErrorList
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if !has(k) {
				errs = append(errs, field.Required(dataPath.Key(k), ""))
			}
		}
		return errs
	}
	return nil
}

// jsonKey requires key and that it holds a JSON object; the error shows
// the decoder's message but never the content.
func jsonKey(s *corev1.Secret, dataPath *field.Path, key string) field.ErrorList {
	b, ok := s.Data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	if err := json.Unmarshal(b, &map[string]any{}); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), redacted, err.Error())}
	}
	return nil
}

// SecretUpdate adds the update rules: the type never changes, and an
// immutable Secret keeps its data and the flag.
func SecretUpdate(obj, old runtime.Object) field.ErrorList {
	n, o := obj.(*corev1.Secret), old.(*corev1.Secret)
	errs := apimachineryvalidation.ValidateImmutableField(n.Type, o.Type, field.NewPath("type"))
	if isTrue(o.Immutable) {
		if !isTrue(n.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSet))
		}
		// stringData is already part of data here.
		if !reflect.DeepEqual(n.Data, o.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSet))
		}
	}
	return errs
}

// Namespace validates spec.finalizers, which upstream holds to the
// finalizer name rules too (qualified, or standard when without a domain).
func Namespace(obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	var errs field.ErrorList
	fld := field.NewPath("spec", "finalizers")
	for _, f := range ns.Spec.Finalizers {
		errs = append(errs, FinalizerName(string(f), fld)...)
	}
	return errs
}

func configMapKey(fld *field.Path, k string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(k) {
		errs = append(errs, field.Invalid(fld.Key(k), k, msg))
	}
	return errs
}

func isTrue(b *bool) bool { return b != nil && *b }
