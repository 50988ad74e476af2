package hub

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// Issue 12 item 2: the validation kube-apiserver applies to the built-in
// kinds. Each case sends the same invalid object (or change) to both sides
// and compares code, reason and the whole message; cases that kube accepts
// are there too, so a hub that refuses too much fails as well.

// valCase is one request of a validation table.
type valCase struct {
	name string
	req  fidReq
}

// runCases runs each case as a subtest through f.Same.
func valCases(t *testing.T, f *fidelity, cases []valCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { f.Same(t, c.req) })
	}
}

// js marshals v; the tables build their objects as maps.
func valJS(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// b64 is how a Secret's data travels in JSON.
func valB64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// obj is an object of apiVersion/kind named name, with the rest of its
// top-level fields from extra; metadata in extra is merged.
func valObj(apiVersion, kind, name string, extra map[string]any) string {
	m := map[string]any{"apiVersion": apiVersion, "kind": kind}
	md := map[string]any{"name": name}
	for k, v := range extra {
		if k == "metadata" {
			for mk, mv := range v.(map[string]any) {
				md[mk] = mv
			}
			continue
		}
		m[k] = v
	}
	m["metadata"] = md
	return valJS(m)
}

func valPost(path, body string) fidReq { return fidReq{Method: "POST", Path: path, Body: body} }

func valPatch(path, body string) fidReq { return fidReq{Method: "PATCH", Path: path, Body: body} }

// apply is a server-side apply of body (JSON is YAML) by manager "fid".
func valApply(path, body string) fidReq {
	return fidReq{Method: "PATCH", Path: path + "?fieldManager=fid&force=true", Body: body, Ctype: "application/apply-patch+yaml"}
}

const valCMPath = "/api/v1/namespaces/default/configmaps"
const valSecretPath = "/api/v1/namespaces/default/secrets"

func init() {
	registerFidelity("02-valid/configmap", func(t *testing.T, f *fidelity) {
		cm := func(name string, extra map[string]any) string { return valObj("v1", "ConfigMap", name, extra) }
		valCases(t, f, []valCase{
			{"key-space", valPost(valCMPath, cm(f.unique("cm"), map[string]any{"data": map[string]any{"a b": "x"}}))},
			{"key-binary-dotdot", valPost(valCMPath, cm(f.unique("cm"), map[string]any{"binaryData": map[string]any{"..": valB64("x")}}))},
			{"key-too-long", valPost(valCMPath, cm(f.unique("cm"), map[string]any{"data": map[string]any{strings.Repeat("k", 254): "x"}}))},
			{"duplicate-key", valPost(valCMPath, cm(f.unique("cm"), map[string]any{"data": map[string]any{"k": "v"}, "binaryData": map[string]any{"k": valB64("v")}}))},
			{"too-large", valPost(valCMPath, cm(f.unique("cm"), map[string]any{"data": map[string]any{"a": strings.Repeat("x", 1<<20), "b": "y"}}))},
			{"valid-keys", valPost(valCMPath, cm(f.unique("cm"), map[string]any{"data": map[string]any{"a.b_c-D": "x"}, "binaryData": map[string]any{".e": valB64("y")}}))},
		})
		// An immutable ConfigMap: every write path refuses to change its
		// data or to clear the flag, and still allows metadata changes.
		name := f.unique("cm-imm")
		f.Same(t, valPost(valCMPath, cm(name, map[string]any{"immutable": true, "data": map[string]any{"a": "1"}, "binaryData": map[string]any{"b": valB64("2")}})))
		p := valCMPath + "/" + name
		valCases(t, f, []valCase{
			{"imm-put-data", fidReq{Method: "PUT", Path: p, Body: cm(name, map[string]any{"immutable": true, "data": map[string]any{"a": "2"}, "binaryData": map[string]any{"b": valB64("2")}})}},
			{"imm-patch-data", valPatch(p, `{"data":{"a":"2"}}`)},
			{"imm-patch-binarydata", valPatch(p, `{"binaryData":{"c":"eA=="}}`)},
			{"imm-patch-flag-off", valPatch(p, `{"immutable":false}`)},
			{"imm-patch-flag-null", valPatch(p, `{"immutable":null}`)},
			{"imm-patch-all", valPatch(p, `{"immutable":false,"data":{"a":"3"},"binaryData":null}`)},
			{"imm-jsonpatch", fidReq{Method: "PATCH", Path: p, Body: `[{"op":"replace","path":"/data/a","value":"4"}]`, Ctype: "application/json-patch+json"}},
			{"imm-strategic", fidReq{Method: "PATCH", Path: p, Body: `{"data":{"z":"4"}}`, Ctype: "application/strategic-merge-patch+json"}},
			{"imm-apply", valApply(p, cm(name, map[string]any{"data": map[string]any{"a": "5"}}))},
			{"imm-dryrun", valPatch(p+"?dryRun=All", `{"data":{"a":"6"}}`)},
			{"imm-labels-ok", valPatch(p, `{"metadata":{"labels":{"x":"y"}}}`)},
			{"imm-same-data-ok", valPatch(p, `{"data":{"a":"1"}}`)},
		})
		// A mutable one may turn immutable, and then is held to it.
		name = f.unique("cm-mut")
		f.Same(t, valPost(valCMPath, cm(name, map[string]any{"data": map[string]any{"a": "1"}})))
		p = valCMPath + "/" + name
		valCases(t, f, []valCase{
			{"mut-patch-bad-key", valPatch(p, `{"data":{"bad key":"1"}}`)},
			{"mut-apply-bad-key", valApply(p, cm(name, map[string]any{"data": map[string]any{"bad/key": "1"}}))},
			{"mut-turn-immutable", valPatch(p, `{"immutable":true,"data":{"a":"2"}}`)},
			{"mut-then-frozen", valPatch(p, `{"data":{"a":"3"}}`)},
		})
	})

	registerFidelity("02-valid/secret", func(t *testing.T, f *fidelity) {
		sec := func(typ string, data map[string]string, extra map[string]any) string {
			d := map[string]any{}
			for k, v := range data {
				d[k] = valB64(v)
			}
			if extra == nil {
				extra = map[string]any{}
			}
			extra["data"] = d
			if typ != "" {
				extra["type"] = typ
			}
			return valObj("v1", "Secret", f.unique("sec"), extra)
		}
		valCases(t, f, []valCase{
			{"tls-missing-both", valPost(valSecretPath, sec("kubernetes.io/tls", nil, nil))},
			{"tls-missing-key", valPost(valSecretPath, sec("kubernetes.io/tls", map[string]string{"tls.crt": "c"}, nil))},
			{"tls-ok", valPost(valSecretPath, sec("kubernetes.io/tls", map[string]string{"tls.crt": "", "tls.key": ""}, nil))},
			{"dockerconfigjson-missing", valPost(valSecretPath, sec("kubernetes.io/dockerconfigjson", nil, nil))},
			{"dockerconfigjson-not-json", valPost(valSecretPath, sec("kubernetes.io/dockerconfigjson", map[string]string{".dockerconfigjson": "nope"}, nil))},
			{"dockerconfigjson-array", valPost(valSecretPath, sec("kubernetes.io/dockerconfigjson", map[string]string{".dockerconfigjson": "[1]"}, nil))},
			{"dockerconfigjson-ok", valPost(valSecretPath, sec("kubernetes.io/dockerconfigjson", map[string]string{".dockerconfigjson": `{"auths":{}}`}, nil))},
			{"dockercfg-missing", valPost(valSecretPath, sec("kubernetes.io/dockercfg", nil, nil))},
			{"dockercfg-not-json", valPost(valSecretPath, sec("kubernetes.io/dockercfg", map[string]string{".dockercfg": "{"}, nil))},
			{"dockercfg-stringdata", valPost(valSecretPath, sec("kubernetes.io/dockercfg", nil, map[string]any{"stringData": map[string]any{".dockercfg": "{}"}}))},
			{"basic-auth-none", valPost(valSecretPath, sec("kubernetes.io/basic-auth", nil, nil))},
			{"basic-auth-password", valPost(valSecretPath, sec("kubernetes.io/basic-auth", map[string]string{"password": ""}, nil))},
			{"ssh-auth-missing", valPost(valSecretPath, sec("kubernetes.io/ssh-auth", nil, nil))},
			{"ssh-auth-empty", valPost(valSecretPath, sec("kubernetes.io/ssh-auth", map[string]string{"ssh-privatekey": ""}, nil))},
			{"sa-token-no-annotation", valPost(valSecretPath, sec("kubernetes.io/service-account-token", nil, nil))},
			{"bad-key", valPost(valSecretPath, sec("", map[string]string{"a:b": "x"}, nil))},
			{"bad-stringdata-key", valPost(valSecretPath, sec("", nil, map[string]any{"stringData": map[string]any{"a b": "x"}}))},
			{"too-large", valPost(valSecretPath, sec("Opaque", map[string]string{"a": strings.Repeat("x", 1<<20), "b": "y"}, nil))},
			{"custom-type-ok", valPost(valSecretPath, sec("example.com/thing", nil, nil))},
		})
		// Type and immutability on every update path.
		name := f.unique("sec-imm")
		f.Same(t, valPost(valSecretPath, valObj("v1", "Secret", name, map[string]any{"immutable": true, "data": map[string]any{"a": valB64("1")}})))
		p := valSecretPath + "/" + name
		valCases(t, f, []valCase{
			{"imm-put-no-type-same-data-ok", fidReq{Method: "PUT", Path: p, Body: valObj("v1", "Secret", name, map[string]any{"immutable": true, "data": map[string]any{"a": valB64("1")}})}},
			{"imm-put-data", fidReq{Method: "PUT", Path: p, Body: valObj("v1", "Secret", name, map[string]any{"immutable": true, "data": map[string]any{"a": valB64("2")}})}},
			{"imm-patch-data", valPatch(p, `{"data":{"b":"eA=="}}`)},
			{"imm-patch-stringdata", valPatch(p, `{"stringData":{"a":"9"}}`)},
			{"imm-patch-flag-off", valPatch(p, `{"immutable":false}`)},
			{"imm-patch-type", valPatch(p, `{"type":"kubernetes.io/tls"}`)},
			{"imm-apply", valApply(p, valObj("v1", "Secret", name, map[string]any{"stringData": map[string]any{"a": "7"}}))},
			{"imm-dryrun", valPatch(p+"?dryRun=All", `{"immutable":false}`)},
			{"imm-labels-ok", valPatch(p, `{"metadata":{"labels":{"x":"y"}}}`)},
		})
	})
}
