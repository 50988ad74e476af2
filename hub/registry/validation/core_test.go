package validation

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// msg is how the errors read in a 422 Status message (deduplicated, in
// order), or "" for none.
func msg(errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

func check(t *testing.T, name string, errs field.ErrorList, want string) {
	t.Helper()
	if got := msg(errs); got != want {
		t.Errorf("%s:\n got  %q\n want %q", name, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestConfigMap(t *testing.T) {
	for _, c := range []struct {
		name string
		cm   corev1.ConfigMap
		want string
	}{
		{"ok", corev1.ConfigMap{Data: map[string]string{"a.b_c-D": "x"}, BinaryData: map[string][]byte{".e": nil}}, ""},
		{"key", corev1.ConfigMap{Data: map[string]string{"a b": ""}}, `data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"dotdot", corev1.ConfigMap{BinaryData: map[string][]byte{"..": nil}}, `binaryData[..]: Invalid value: "..": must not be '..'`},
		{"duplicate", corev1.ConfigMap{Data: map[string]string{"k": ""}, BinaryData: map[string][]byte{"k": nil}}, `data[k]: Invalid value: "k": duplicate of key present in binaryData`},
		{"size", corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", corev1.MaxSecretSize), "b": "y"}}, `[]: Too long: may not be more than 1048576 bytes`},
	} {
		check(t, c.name, ConfigMap(&c.cm), c.want)
	}
}

func TestConfigMapUpdate(t *testing.T) {
	frozen := &corev1.ConfigMap{Immutable: ptr(true), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": []byte("2")}}
	for _, c := range []struct {
		name     string
		old, new *corev1.ConfigMap
		want     string
	}{
		{"same", frozen, frozen.DeepCopy(), ""},
		{"mutable-changes", &corev1.ConfigMap{}, &corev1.ConfigMap{Data: map[string]string{"a": "b"}, Immutable: ptr(false)}, ""},
		{"data", frozen, &corev1.ConfigMap{Immutable: ptr(true), Data: map[string]string{"a": "2"}, BinaryData: frozen.BinaryData}, "data: Forbidden: field is immutable when `immutable` is set"},
		{"all", frozen, &corev1.ConfigMap{Immutable: ptr(false)}, "[immutable: Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when `immutable` is set, binaryData: Forbidden: field is immutable when `immutable` is set]"},
		{"flag-nil", frozen, &corev1.ConfigMap{Data: frozen.Data, BinaryData: frozen.BinaryData}, "immutable: Forbidden: field is immutable when `immutable` is set"},
	} {
		check(t, c.name, ConfigMapUpdate(c.new, c.old), c.want)
	}
}

func TestSecret(t *testing.T) {
	sec := func(typ corev1.SecretType, keys ...string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for _, k := range keys {
			s.Data[k] = nil
		}
		return s
	}
	withData := func(s *corev1.Secret, k, v string) *corev1.Secret { s.Data[k] = []byte(v); return s }
	for _, c := range []struct {
		name string
		s    *corev1.Secret
		want string
	}{
		{"opaque", sec(corev1.SecretTypeOpaque, "a"), ""},
		{"custom", sec("example.com/x"), ""},
		{"key", sec(corev1.SecretTypeOpaque, "a:b"), `data[a:b]: Invalid value: "a:b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"size", withData(sec(""), "a", strings.Repeat("x", corev1.MaxSecretSize+1)), `data: Too long: may not be more than 1048576 bytes`},
		{"tls", sec(corev1.SecretTypeTLS), `[data[tls.crt]: Required value, data[tls.key]: Required value]`},
		{"tls-key", sec(corev1.SecretTypeTLS, "tls.crt"), `data[tls.key]: Required value`},
		{"tls-ok", sec(corev1.SecretTypeTLS, "tls.crt", "tls.key"), ""},
		{"dockerconfigjson", sec(corev1.SecretTypeDockerConfigJson), `data[.dockerconfigjson]: Required value`},
		{"dockerconfigjson-bad", withData(sec(corev1.SecretTypeDockerConfigJson), ".dockerconfigjson", "nope"), `data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'o' in literal null (expecting 'u')`},
		{"dockerconfigjson-array", withData(sec(corev1.SecretTypeDockerConfigJson), ".dockerconfigjson", "[1]"), `data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}`},
		{"dockercfg", sec(corev1.SecretTypeDockercfg), `data[.dockercfg]: Required value`},
		{"dockercfg-ok", withData(sec(corev1.SecretTypeDockercfg), ".dockercfg", "{}"), ""},
		{"basic-auth", sec(corev1.SecretTypeBasicAuth), `[data[username]: Required value, data[password]: Required value]`},
		{"basic-auth-ok", sec(corev1.SecretTypeBasicAuth, "password"), ""},
		{"ssh", sec(corev1.SecretTypeSSHAuth, "ssh-privatekey"), `data[ssh-privatekey]: Required value`},
		{"ssh-ok", withData(sec(corev1.SecretTypeSSHAuth), "ssh-privatekey", "k"), ""},
		{"sa-token", sec(corev1.SecretTypeServiceAccountToken), `metadata.annotations[kubernetes.io/service-account.name]: Required value`},
	} {
		check(t, c.name, Secret(c.s), c.want)
	}
	sa := sec(corev1.SecretTypeServiceAccountToken)
	sa.Annotations = map[string]string{corev1.ServiceAccountNameKey: "x"}
	check(t, "sa-token-ok", Secret(sa), "")
}

func TestSecretUpdate(t *testing.T) {
	frozen := &corev1.Secret{Type: corev1.SecretTypeOpaque, Immutable: ptr(true), Data: map[string][]byte{"a": []byte("1")}}
	changed := frozen.DeepCopy()
	changed.Data["a"] = []byte("2")
	retyped := frozen.DeepCopy()
	retyped.Type = corev1.SecretTypeTLS
	thawed := frozen.DeepCopy()
	thawed.Immutable = nil
	check(t, "same", SecretUpdate(frozen.DeepCopy(), frozen), "")
	check(t, "data", SecretUpdate(changed, frozen), "data: Forbidden: field is immutable when `immutable` is set")
	check(t, "type", SecretUpdate(retyped, frozen), `type: Invalid value: "kubernetes.io/tls": field is immutable`)
	check(t, "flag", SecretUpdate(thawed, frozen), "immutable: Forbidden: field is immutable when `immutable` is set")
}

func TestKubeFinalizerNames(t *testing.T) {
	for _, c := range []struct {
		fins []string
		want string
	}{
		{[]string{"kubernetes", "orphan", "foregroundDeletion", "example.com/x", "a/b"}, ""},
		{[]string{"example.com/x", "foo", "bar"}, `[metadata.finalizers[1]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified, metadata.finalizers[2]: Invalid value: "bar": name is neither a standard finalizer name nor is it fully qualified]`},
	} {
		check(t, strings.Join(c.fins, ","), KubeFinalizerNames(corev1.Resource("configmaps"), &metav1.ObjectMeta{Finalizers: c.fins}), c.want)
	}
	check(t, "lease", KubeFinalizerNames(coordinationv1.Resource("leases"), &metav1.ObjectMeta{Finalizers: []string{"foo"}}), "")
	ns := &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"foo"}}}
	check(t, "namespace spec", Namespace(ns), `spec.finalizers: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`)
}
