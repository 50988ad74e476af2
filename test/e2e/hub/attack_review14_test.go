package hub

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// Rows of attack review 14 (ids "r14:<n>"): the aggregation layer and the
// resource-proxy provider, against a real hub loading the real
// wharf-provider-resource-proxy (bin/, make build) and the aggregation
// probe. The README walk-through set-up: root:acme:{platform,team-a,team-b},
// platform the target of databases.example.com/v1 for both teams; alice is
// cluster-admin of team-a (the attacker), bob of team-b (the victim, who
// owns team-b-db). Each row is one attempt and passes when the system is
// safe.

const (
	r14A    = "/clusters/root:acme:team-a"
	r14DBs  = r14A + "/apis/databases.example.com/v1/namespaces/default/databases"
	r14BDB  = r14DBs + "/team-b-db"
	r14Svcs = r14A + "/apis/apiregistration.k8s.io/v1/apiservices"
)

type r14Row struct {
	id, what string
	run      func(t *testing.T) (int, string)
	code     int    // expected code (0: any)
	contains string // the body must contain it
	absent   string // the body must not contain it
	after    func(t *testing.T) error
}

func r14DB(name, ownerWS, ownerCluster string) string {
	return fmt.Sprintf(`{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":%q,"namespace":"default","labels":{"proxy.wharf.dev/owner-workspace":%q,"proxy.wharf.dev/owner-cluster":%q}},"spec":{"size":1}}`,
		name, ownerWS, ownerCluster)
}

func TestAttackReview14(t *testing.T) {
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rpBin := filepath.Join(root, "bin", "wharf-provider-resource-proxy")
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", aggTokens(t),
		"--provider", "aggprobe=" + aggProbe(t, "aggprobe"), "--provider", "resource-proxy=" + rpBin}})
	h.createWorkspace("root", "acme")
	clusters := map[string]string{}
	for _, ws := range []string{"platform", "team-a", "team-b"} {
		h.createWorkspace("root:acme", ws)
		eventually(t, 60*time.Second, func() error {
			out, err := h.kubectl("root:acme", "get", "workspace", ws, "-o", "jsonpath={.status.cluster}")
			if err != nil || out == "" {
				return fmt.Errorf("%v: %s", err, out)
			}
			clusters[ws] = out
			return nil
		})
		h.enableProvider("root:acme:"+ws, "resource-proxy")
	}
	h.enableProvider("root:acme:team-a", "aggprobe")
	h.mustApply("", hubCRD14("databases"), "apply")
	h.mustApply("", hubCRD14("queues"), "apply")
	h.mustApply("", r14StatusCRD, "apply")
	h.mustApply("root:acme:platform", r14StatusRole, "apply")
	h.mustKubectl("root:acme:platform", "create", "clusterrole", "db-user", "--verb=*", "--resource=databases.databases.example.com")
	h.mustKubectl("root:acme:platform", "create", "clusterrole", "ns-create", "--verb=create", "--resource=namespaces")
	for team, user := range map[string]string{"team-a": "alice", "team-b": "bob"} {
		ws := "root:acme:" + team
		h.mustKubectl("root:acme:platform", "create", "clusterrolebinding", "db-"+team, "--clusterrole=db-user", "--user=wharf:workspace:"+ws)
		h.mustKubectl("root:acme:platform", "create", "clusterrolebinding", "sdb-"+team, "--clusterrole=sdb-user", "--user=wharf:workspace:"+ws)
		h.mustKubectl("root:acme:platform", "create", "clusterrolebinding", "ns-"+team, "--clusterrole=ns-create", "--user=wharf:workspace:"+ws)
		h.mustApply(ws, r14Admin, "apply")
		h.mustKubectl(ws, "create", "clusterrolebinding", "admin-"+user, "--clusterrole=r14-admin", "--user="+user)
		h.mustKubectl(ws, "create", "clusterrole", "rp-namespaces", "--verb=get", "--resource=namespaces")
		h.mustKubectl(ws, "create", "clusterrolebinding", "rp-namespaces", "--clusterrole=rp-namespaces", "--user=system:wharf:provider:resource-proxy")
		h.mustApply(ws, `apiVersion: proxy.wharf.dev/v1alpha1
kind: ResourceProxy
metadata: {name: databases}
spec:
  target: {workspace: root:acme:platform}
  resources: [{group: databases.example.com, version: v1, resource: databases}]
`, "apply")
	}
	for _, team := range []string{"team-a", "team-b"} {
		ws := "root:acme:" + team
		eventually(t, 90*time.Second, func() error {
			out, err := h.kubectl(ws, "get", "resourceproxy", "databases", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			if err != nil || out != "True" {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		eventually(t, 60*time.Second, func() error {
			out, err := h.applyStdin(ws, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"`+team+`-db","namespace":"default"},"spec":{"size":1}}`, "create")
			if err != nil && !strings.Contains(out, "AlreadyExists") {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	}
	cA, cB := clusters["team-a"], clusters["team-b"]
	alice := func(method, path, ctype, body string, hdr ...string) func(t *testing.T) (int, string) {
		return func(t *testing.T) (int, string) {
			hd := http.Header{}
			if ctype != "" {
				hd.Set("Content-Type", ctype)
			} else if body != "" {
				hd["Content-Type"] = nil // reqAs would default it; send none
			}
			for i := 0; i+1 < len(hdr); i += 2 {
				hd.Add(hdr[i], hdr[i+1])
			}
			code, b, _ := h.reqNoDefault("alice-token", method, path, hd, body)
			return code, b
		}
	}
	// bobSees: team-b's list through the proxy, names and owner labels.
	bobSees := func() string {
		code, b, _ := h.reqAs("bob-token", http.MethodGet, "/clusters/root:acme:team-b/apis/databases.example.com/v1/namespaces/default/databases", nil, "")
		return fmt.Sprintf("%d %s", code, b)
	}
	platformObj := func(name string) string {
		out, err := h.kubectl("root:acme:platform", "get", "databases", "-n", "default", name, "-o", `jsonpath={.metadata.labels.proxy\.wharf\.dev/owner-workspace}/{.metadata.labels.proxy\.wharf\.dev/owner-cluster}`)
		if err != nil && strings.Contains(out, "NotFound") {
			return ""
		}
		return out
	}
	bStillThere := func(t *testing.T) error {
		if out := platformObj("team-b-db"); out != "team-b/"+cB {
			return fmt.Errorf("team-b-db on the target now %q", out)
		}
		return nil
	}
	notPlanted := func(name string) func(t *testing.T) error {
		return func(t *testing.T) error {
			if s := bobSees(); strings.Contains(s, `"name":"`+name+`"`) {
				return fmt.Errorf("team-b now sees %s planted by team-a: %s", name, s)
			}
			if out := platformObj(name); out != "" && out != "team-a/"+cA {
				return fmt.Errorf("%s on the target is labelled %q, not team-a's", name, out)
			}
			return nil
		}
	}
	stillOwnedByA := func(name string) func(t *testing.T) error {
		return func(t *testing.T) error {
			if out := platformObj(name); out != "team-a/"+cA {
				return fmt.Errorf("%s on the target is labelled %q, not team-a's", name, out)
			}
			return nil
		}
	}
	mkA := func(t *testing.T, name string) {
		eventually(t, 30*time.Second, func() error {
			code, b, _ := h.reqAs("alice-token", http.MethodPost, r14DBs, nil, r14DB(name, "team-a", cA))
			if code != http.StatusCreated {
				return fmt.Errorf("%d %s", code, b)
			}
			return nil
		})
	}
	rvOf := func(name string) string {
		out, _ := h.kubectl("root:acme:platform", "get", "databases", "-n", "default", name, "-o", "jsonpath={.metadata.resourceVersion}")
		return out
	}
	// ownA: a row on an object of A's own, created when the row runs
	// (r14:26 deletes A's objects).
	ownA := func(name string, run func(t *testing.T) (int, string)) func(t *testing.T) (int, string) {
		return func(t *testing.T) (int, string) {
			mkA(t, name)
			return run(t)
		}
	}

	yamlObj := func(name, ws, cl string) string {
		return fmt.Sprintf("apiVersion: databases.example.com/v1\nkind: Database\nmetadata:\n  name: %s\n  namespace: default\n  labels:\n    proxy.wharf.dev/owner-workspace: %s\n    proxy.wharf.dev/owner-cluster: %q\nspec:\n  size: 1\n", name, ws, cl)
	}
	rows := []r14Row{
		// Reading B's objects as A.
		{id: "r14:1", what: "list with B's owner label selector", run: alice("GET", r14DBs+"?labelSelector=proxy.wharf.dev%2Fowner-workspace%3Dteam-b", "", ""), code: 200, absent: "team-b-db"},
		{id: "r14:2", what: "list with != selector", run: alice("GET", r14DBs+"?labelSelector=proxy.wharf.dev%2Fowner-workspace!%3Dteam-a", "", ""), code: 200, absent: "team-b-db"},
		{id: "r14:3", what: "list with set-based in (team-a,team-b)", run: alice("GET", r14DBs+"?labelSelector=proxy.wharf.dev%2Fowner-workspace+in+(team-a,team-b)", "", ""), code: 200, absent: "team-b-db"},
		{id: "r14:4", what: "list with a field selector on B's name", run: alice("GET", r14DBs+"?fieldSelector=metadata.name%3Dteam-b-db", "", ""), code: 200, absent: "team-b-db"},
		{id: "r14:5", what: "two labelSelector parameters", run: alice("GET", r14DBs+"?labelSelector=proxy.wharf.dev%2Fowner-workspace%3Dteam-b&labelSelector=x%3Dy", "", ""), absent: "team-b-db"},
		{id: "r14:6", what: "watch from resourceVersion 0", run: alice("GET", r14DBs+"?watch=true&resourceVersion=0&timeoutSeconds=2", "", ""), code: 200, absent: "team-b-db"},
		{id: "r14:7", what: "watch spelled watch=yes (kube's bool parsing)", run: alice("GET", r14DBs+"?watch=yes&resourceVersion=0&timeoutSeconds=2", "", ""), absent: "team-b-db"},
		{id: "r14:8", what: "legacy /watch/ path, cluster-wide", run: alice("GET", r14A+"/apis/databases.example.com/v1/watch/databases?timeoutSeconds=2", "", ""), absent: "team-b-db"},
		{id: "r14:9", what: "legacy /watch/ path, namespaced", run: alice("GET", r14A+"/apis/databases.example.com/v1/watch/namespaces/default/databases?timeoutSeconds=2", "", ""), absent: "team-b-db"},
		{id: "r14:10", what: "cluster-wide list", run: alice("GET", r14A+"/apis/databases.example.com/v1/databases", "", ""), code: 200, absent: "team-b-db"},
		{id: "r14:11", what: "named GET of B's object", run: alice("GET", r14BDB, "", ""), code: 404, absent: `"spec"`},
		{id: "r14:12", what: "named GET as Table", run: alice("GET", r14BDB, "", "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"), code: 404, absent: `"spec"`},
		{id: "r14:13", what: "named GET as PartialObjectMetadata", run: alice("GET", r14BDB, "", "", "Accept", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"), code: 404},
		{id: "r14:14", what: "HEAD of B's object", run: alice("HEAD", r14BDB, "", ""), code: 404},
		{id: "r14:15", what: "GET B's status subresource", run: alice("GET", r14BDB+"/status", "", ""), code: 404},
		{id: "r14:16", what: "GET with Accept: */*", run: alice("GET", r14BDB, "", "", "Accept", "*/*"), code: 404, absent: `"spec"`},
		{id: "r14:17", what: "GET with Accept: application/yaml", run: alice("GET", r14BDB, "", "", "Accept", "application/yaml"), code: 404, absent: "size"},
		{id: "r14:18", what: "encoded ../ from own name to B's", run: alice("GET", r14DBs+"/team-a-db%2F..%2Fteam-b-db", "", ""), absent: `"spec"`},
		{id: "r14:19", what: "double slash", run: alice("GET", r14DBs+"//team-b-db", "", ""), absent: `"spec"`},
		// Writing B's objects as A.
		{id: "r14:20", what: "merge patch of B's object", run: alice("PATCH", r14BDB, "application/merge-patch+json", `{"spec":{"size":99}}`), code: 404, after: bStillThere},
		{id: "r14:21", what: "JSON patch removing B's labels", run: alice("PATCH", r14BDB, "application/json-patch+json", `[{"op":"remove","path":"/metadata/labels"}]`), code: 404, after: bStillThere},
		{id: "r14:22", what: "server-side apply of B's name with A's labels", run: alice("PATCH", r14BDB+"?fieldManager=evil&force=true", "application/apply-patch+yaml", r14DB("team-b-db", "team-a", cA)), code: 404, after: bStillThere},
		{id: "r14:23", what: "PUT of B's object", run: alice("PUT", r14BDB, "application/json", r14DB("team-b-db", "team-a", cA)), code: 404, after: bStillThere},
		{id: "r14:24", what: "PUT of B's status", run: alice("PUT", r14BDB+"/status", "application/json", r14DB("team-b-db", "team-b", cB)), code: 404, after: bStillThere},
		{id: "r14:25", what: "DELETE of B's object", run: alice("DELETE", r14BDB, "", ""), code: 404, after: bStillThere},
		{id: "r14:26", what: "deletecollection", run: alice("DELETE", r14DBs, "", ""), after: bStillThere},
		{id: "r14:27", what: "deletecollection with B's selector", run: alice("DELETE", r14DBs+"?labelSelector=proxy.wharf.dev%2Fowner-workspace%3Dteam-b", "", ""), after: bStillThere},
		// Planting objects into B's view / handing own objects to B.
		{id: "r14:28", what: "create (JSON) carrying B's owner labels", run: alice("POST", r14DBs, "application/json", r14DB("planted-json", "team-b", cB)), code: 201, after: notPlanted("planted-json")},
		{id: "r14:29", what: "create (YAML body) carrying B's owner labels", run: alice("POST", r14DBs, "application/yaml", yamlObj("planted-yaml", "team-b", cB)), after: notPlanted("planted-yaml")},
		{id: "r14:30", what: "create with no Content-Type carrying B's owner labels", run: alice("POST", r14DBs, "", r14DB("planted-noctype", "team-b", cB)), after: notPlanted("planted-noctype")},
		{id: "r14:31", what: "server-side apply creating with B's labels", run: alice("PATCH", r14DBs+"/planted-apply?fieldManager=evil", "application/apply-patch+yaml", r14DB("planted-apply", "team-b", cB)), after: notPlanted("planted-apply")},
		{id: "r14:32", what: "update own object (YAML body) relabelled as B's", run: ownA("a-transfer-yaml", func(t *testing.T) (int, string) {
			return alice("PUT", r14DBs+"/a-transfer-yaml", "application/yaml", strings.Replace(yamlObj("a-transfer-yaml", "team-b", cB), "  namespace: default\n", "  namespace: default\n  resourceVersion: \""+rvOf("a-transfer-yaml")+"\"\n", 1))(t)
		}), after: notPlanted("a-transfer-yaml")},
		{id: "r14:33", what: "update own object (no Content-Type) relabelled as B's", run: ownA("a-transfer-noctype", func(t *testing.T) (int, string) {
			return alice("PUT", r14DBs+"/a-transfer-noctype", "", strings.Replace(r14DB("a-transfer-noctype", "team-b", cB), `"namespace":"default"`, `"namespace":"default","resourceVersion":"`+rvOf("a-transfer-noctype")+`"`, 1))(t)
		}), after: notPlanted("a-transfer-noctype")},
		{id: "r14:34", what: "JSON patch replacing own labels with B's", run: ownA("a-jsonpatch", alice("PATCH", r14DBs+"/a-jsonpatch", "application/json-patch+json",
			`[{"op":"replace","path":"/metadata/labels","value":{"proxy.wharf.dev/owner-workspace":"team-b","proxy.wharf.dev/owner-cluster":"`+cB+`"}}]`)), after: notPlanted("a-jsonpatch")},
		{id: "r14:35", what: "JSON patch moving labels away", run: ownA("a-jsonpatch-move", alice("PATCH", r14DBs+"/a-jsonpatch-move", "application/json-patch+json",
			`[{"op":"move","from":"/metadata/labels","path":"/metadata/annotations"}]`)), after: stillOwnedByA("a-jsonpatch-move")},
		{id: "r14:60", what: "create with a CBOR body the proxy cannot label", run: alice("POST", r14DBs, "application/cbor", "\xd9\xd9\xf7\xa0"), absent: `"creationTimestamp"`, after: notPlanted("planted-cbor")},
		{id: "r14:61", what: "create with a protobuf Content-Type", run: alice("POST", r14DBs, "application/vnd.kubernetes.protobuf", "k8s\x00"), absent: `"creationTimestamp"`},
		{id: "r14:62", what: "create with a JSON body behind a byte-order mark", run: alice("POST", r14DBs, "application/json", "\ufeff"+r14DB("planted-bom", "team-b", cB)), after: notPlanted("planted-bom")},
		{id: "r14:63", what: "create with labels as a non-object", run: alice("POST", r14DBs, "application/json",
			`{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"planted-lblstr","namespace":"default","labels":"x"}}`), after: notPlanted("planted-lblstr")},
		{id: "r14:64", what: "create with duplicate metadata keys", run: alice("POST", r14DBs, "application/json",
			`{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"planted-dup","namespace":"default"},"metadata":{"name":"planted-dup","namespace":"default","labels":{"proxy.wharf.dev/owner-workspace":"team-b","proxy.wharf.dev/owner-cluster":"`+cB+`"}}}`), after: notPlanted("planted-dup")},
		{id: "r14:65", what: "create of B's name (a name oracle, but no content)", run: alice("POST", r14DBs, "application/json", r14DB("team-b-db", "team-a", cA)), code: 409, absent: cB, after: bStillThere},
		{id: "r14:70", what: "group in upper case", run: alice("GET", r14A+"/apis/DATABASES.example.com/v1/namespaces/default/databases", "", ""), code: 404, absent: "team-b-db"},
		{id: "r14:71", what: "a version the APIService does not name", run: alice("GET", r14A+"/apis/databases.example.com/v2/namespaces/default/databases", "", ""), code: 404, absent: "team-b-db"},
		{id: "r14:72", what: "lower-case method get on the collection (no selector injected?)", run: alice("get", r14DBs, "", ""), absent: "team-b-db"},
		{id: "r14:73", what: "lower-case method delete on the collection", run: alice("delete", r14DBs, "", ""), after: bStillThere},
		{id: "r14:74", what: "custom method LIST on the collection", run: alice("LIST", r14DBs, "", ""), absent: "team-b-db"},
		{id: "r14:75", what: "lower-case method head on B's object", run: alice("head", r14BDB, "", ""), absent: `"spec"`},
		{id: "r14:76", what: "lower-case method put of B's object", run: alice("put", r14BDB, "application/json", r14DB("team-b-db", "team-a", cA)), after: bStillThere},
		{id: "r14:77", what: "status merge patch of own object carrying B's owner labels (status writes are not labelled)", run: func(t *testing.T) (int, string) {
			sdbs := r14A + "/apis/databases.example.com/v1/namespaces/default/statusdbs"
			eventually(t, 30*time.Second, func() error {
				code, b, _ := h.reqAs("alice-token", http.MethodPost, sdbs, nil, `{"apiVersion":"databases.example.com/v1","kind":"Statusdb","metadata":{"name":"a-sdb","namespace":"default"}}`)
				if code != http.StatusCreated {
					return fmt.Errorf("%d %s", code, b)
				}
				return nil
			})
			return alice("PATCH", sdbs+"/a-sdb/status", "application/merge-patch+json",
				`{"metadata":{"labels":{"proxy.wharf.dev/owner-workspace":"team-b","proxy.wharf.dev/owner-cluster":"`+cB+`"}},"status":{"x":1}}`)(t)
		}, after: func(t *testing.T) error {
			out, _ := h.kubectl("root:acme:platform", "get", "statusdbs", "-n", "default", "a-sdb", "-o", `jsonpath={.metadata.labels.proxy\.wharf\.dev/owner-workspace}`)
			if out != "team-a" {
				return fmt.Errorf("a-sdb now labelled %q", out)
			}
			return nil
		}},
		// Identity tricks.
		{id: "r14:36", what: "impersonate B's workspace identity at the hub", run: alice("GET", r14DBs, "", "", "Impersonate-User", "wharf:workspace:root:acme:team-b"), absent: "team-b-db"},
		{id: "r14:37", what: "impersonate the resource-proxy provider identity", run: alice("GET", r14DBs, "", "", "Impersonate-User", "system:wharf:provider:resource-proxy"), absent: "team-b-db"},
		{id: "r14:38", what: "forged X-Kedge-Tenant / Cluster headers", run: alice("GET", r14DBs, "", "", "X-Kedge-Tenant", "root:acme:team-b", "X-Kedge-Cluster", cB), code: 200, absent: "team-b-db"},
		{id: "r14:66", what: "impersonate team-a's workspace identity straight at the target", run: alice("GET", "/clusters/root:acme:platform/apis/databases.example.com/v1/namespaces/default/databases", "", "",
			"Impersonate-User", "wharf:workspace:root:acme:team-a"), code: 403, absent: "team-b-db"},
		{id: "r14:67", what: "impersonate system:masters in team-a, then the provider's /metrics", run: alice("GET", "/services/providers/resource-proxy/metrics", "", "",
			"X-Wharf-Workspace", "root:acme:team-a", "Impersonate-User", "alice", "Impersonate-Group", "system:masters"), absent: "wharf_resource_proxy"},
		{id: "r14:68", what: "impersonate the hub's own identity in team-a", run: alice("GET", r14DBs, "", "", "Impersonate-User", "system:wharf:hub"), absent: "team-b-db"},
		{id: "r14:69", what: "grant B's workspace identity in team-a and impersonate it there", run: func(t *testing.T) (int, string) {
			h.mustKubectl("root:acme:team-a", "create", "clusterrolebinding", "r14-as-b", "--clusterrole=r14-admin", "--user=wharf:workspace:root:acme:team-b")
			var code int
			var b string
			eventually(t, 30*time.Second, func() error {
				code, b = alice("GET", r14DBs, "", "", "Impersonate-User", "wharf:workspace:root:acme:team-b")(t)
				if code == 403 && strings.Contains(b, "cannot list") {
					return fmt.Errorf("%d %s", code, b)
				}
				return nil
			})
			return code, b
		}, code: 403, contains: "does not forward", absent: "team-b-db"},
		// Direct calls of the provider's aggregated handler.
		{id: "r14:39", what: "direct backend call with a forged X-Kedge-Original-Path", run: alice("GET", "/services/providers/resource-proxy/apis/databases.example.com/v1/namespaces/default/databases", "", "",
			"X-Wharf-Workspace", "root:acme:team-a", "X-Kedge-Original-Path", r14DBs), code: 404, absent: "team-a-db"},
		{id: "r14:40", what: "forged header in lower case and with underscores", run: alice("GET", "/services/providers/resource-proxy/apis/databases.example.com/v1/namespaces/default/databases", "", "",
			"X-Wharf-Workspace", "root:acme:team-a", "x-kedge-original-path", r14DBs, "X_Kedge_Original_Path", r14DBs), code: 404, absent: "team-a-db"},
		{id: "r14:41", what: "forged header with Connection and the hop header", run: alice("GET", "/services/providers/resource-proxy/apis/databases.example.com/v1/namespaces/default/databases", "", "",
			"X-Wharf-Workspace", "root:acme:team-a", "X-Wharf-Original-Path", r14DBs, "Connection", "X-Kedge-User"), code: 404, absent: "team-a-db"},
		{id: "r14:42", what: "direct call as bob naming team-a (RBAC of the backend route)", run: func(t *testing.T) (int, string) {
			code, b, _ := h.reqAs("bob-token", http.MethodGet, "/services/providers/resource-proxy/apis/databases.example.com/v1/namespaces/default/databases",
				http.Header{"X-Wharf-Workspace": {"root:acme:team-a"}, "X-Kedge-Original-Path": {r14DBs}}, "")
			return code, b
		}, absent: "team-a-db"},
		// Metrics.
		{id: "r14:43", what: "resource-proxy /metrics as a workspace admin", run: alice("GET", "/services/providers/resource-proxy/metrics", "", "", "X-Wharf-Workspace", "root:acme:team-a"), code: 404, absent: "wharf_resource_proxy"},
		{id: "r14:44", what: "hub /metrics as a workspace admin", run: alice("GET", "/metrics", "", ""), absent: "wharf_"},
		{id: "r14:45", what: "hub /metrics through the workspace prefix", run: alice("GET", r14A+"/metrics", "", ""), absent: "wharf_"},
		// APIService routing with the real provider.
		{id: "r14:46", what: "workspace admin creates an APIService naming resource-proxy", run: alice("POST", r14Svcs, "application/json", aggService("evil.example.com", "wharf-providers", "resource-proxy", "")), code: 403},
		{id: "r14:47", what: "workspace admin creates one with the protected label", run: alice("POST", r14Svcs, "application/json",
			aggService("evil.example.com", "wharf-providers", "resource-proxy", `"labels":{"wharf.dev/protected":"resource-proxy"}`)), code: 403},
		{id: "r14:48", what: "repoint the ResourceProxy's APIService at aggprobe", run: alice("PATCH", r14Svcs+"/v1.databases.example.com", "application/merge-patch+json", `{"spec":{"service":{"name":"aggprobe"}}}`), code: 403},
		{id: "r14:49", what: "delete the ResourceProxy's APIService", run: alice("DELETE", r14Svcs+"/v1.databases.example.com", "", ""), code: 403, contains: "managed by a ResourceProxy"},
		{id: "r14:50", what: "deletecollection of APIServices", run: alice("DELETE", r14Svcs, "", ""), code: 403},
		{id: "r14:51", what: "status write claiming the group unavailable", run: alice("PATCH", r14Svcs+"/v1.databases.example.com/status", "application/merge-patch+json",
			`{"status":{"conditions":[{"type":"Available","status":"False","reason":"Evil"}]}}`), code: 403},
		{id: "r14:52", what: "APIService for the ResourceProxy's own CRD group wharf.dev", run: alice("POST", r14Svcs, "application/json", aggService("proxy.wharf.dev", "wharf-providers", "resource-proxy", "")), code: 422, contains: "belongs to a provider in the catalog"},
		// Discovery.
		{id: "r14:53", what: "team-a's aggprobe group absent from team-b discovery", run: func(t *testing.T) (int, string) {
			eventually(t, 60*time.Second, func() error {
				if code, body := h.backendAs(h.Token, http.MethodPost, "root:acme:team-a", "aggprobe", "/register"); code != http.StatusOK {
					return fmt.Errorf("register: %d %s", code, body)
				}
				return nil
			})
			code, b, _ := h.reqAs("bob-token", http.MethodGet, "/clusters/root:acme:team-b/apis", nil, "")
			_, agg, _ := h.reqAs("bob-token", http.MethodGet, "/clusters/root:acme:team-b/apis", http.Header{"Accept": {"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}}, "")
			return code, b + agg
		}, code: 200, absent: "probe.example.com"},
		{id: "r14:54", what: "team-a's aggprobe group unreachable in team-b", run: func(t *testing.T) (int, string) {
			code, b, _ := h.reqAs("bob-token", http.MethodGet, "/clusters/root:acme:team-b/apis/probe.example.com/v1", nil, "")
			return code, b
		}, code: 404},
		// ResourceProxy targets.
		{id: "r14:55", what: "a ResourceProxy at a target without RBAC for the client", run: func(t *testing.T) (int, string) {
			h.mustApply("root:acme:team-a", "apiVersion: proxy.wharf.dev/v1alpha1\nkind: ResourceProxy\nmetadata: {name: queues}\nspec:\n  target: {workspace: root:acme:team-b}\n  resources: [{group: queues.example.com, version: v1, resource: queues}]\n", "apply")
			h.mustApply("root:acme:team-b", `{"apiVersion":"queues.example.com/v1","kind":"Queue","metadata":{"name":"b-queue","namespace":"default"}}`, "create")
			var code int
			var b string
			eventually(t, 60*time.Second, func() error {
				code, b, _ = h.reqAs("alice-token", http.MethodGet, r14A+"/apis/queues.example.com/v1/namespaces/default/queues", nil, "")
				// Until the route is up the group is unknown (404 without
				// details) or unavailable (503); then the target answers
				// as a missing workspace would (issue 24 B8).
				if !strings.Contains(b, `"group":"tenancy.wharf.dev"`) {
					return fmt.Errorf("%d %s", code, b)
				}
				return nil
			})
			return code, b
		}, code: 404, contains: `workspaces.tenancy.wharf.dev \"root:acme:team-b\" not found`, absent: "b-queue"},
		{id: "r14:56", what: "external kubeconfig Secret naming a file and an exec plugin", run: func(t *testing.T) (int, string) {
			h.mustKubectl("root:acme:team-a", "create", "clusterrole", "rp-secrets", "--verb=get", "--resource=secrets")
			h.mustKubectl("root:acme:team-a", "create", "clusterrolebinding", "rp-secrets", "--clusterrole=rp-secrets", "--user=system:wharf:provider:resource-proxy")
			kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority: /etc/passwd}\nusers:\n- name: u\n  user:\n    tokenFile: /work/.wharf/admin-token\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/r14-pwned']}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
			h.mustKubectl("root:acme:team-a", "create", "secret", "generic", "evil", "--from-literal=kubeconfig="+kc)
			h.mustApply("root:acme:team-a", "apiVersion: proxy.wharf.dev/v1alpha1\nkind: ResourceProxy\nmetadata: {name: external}\nspec:\n  target: {external: {secretRef: {namespace: default, name: evil, key: kubeconfig}}}\n  resources: [{group: things.example.com, version: v1, resource: things}]\n", "apply")
			var out string
			eventually(t, 60*time.Second, func() error {
				var err error
				out, err = h.kubectl("root:acme:team-a", "get", "resourceproxy", "external", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
				if err != nil || out == "" {
					return fmt.Errorf("%v: %s", err, out)
				}
				return nil
			})
			return 200, out
		}, code: 200, contains: "SecretInvalid"},
		{id: "r14:57", what: "mutual ResourceProxies (team-b routes queues to team-a, team-a to team-b)", run: func(t *testing.T) (int, string) {
			h.mustApply("root:acme:team-b", "apiVersion: proxy.wharf.dev/v1alpha1\nkind: ResourceProxy\nmetadata: {name: queues}\nspec:\n  target: {workspace: root:acme:team-a}\n  resources: [{group: queues.example.com, version: v1, resource: queues}]\n", "apply")
			for _, p := range [][2]string{{"root:acme:team-a", "root:acme:team-b"}, {"root:acme:team-b", "root:acme:team-a"}} {
				h.mustKubectl(p[1], "create", "clusterrolebinding", "q-"+strings.ReplaceAll(p[0], ":", "-"), "--clusterrole=r14-admin", "--user=wharf:workspace:"+p[0])
			}
			var code int
			var b string
			eventually(t, 60*time.Second, func() error {
				start := time.Now()
				code, b, _ = h.reqAs("alice-token", http.MethodGet, r14A+"/apis/queues.example.com/v1/namespaces/default/queues", nil, "")
				if time.Since(start) > 20*time.Second {
					t.Errorf("a list took %s", time.Since(start))
				}
				if code == 404 || code == 503 || code == 200 {
					return fmt.Errorf("%d %s", code, b)
				}
				return nil
			})
			return code, b
		}, code: 403, contains: "does not forward requests sent by a resource proxy"},
		// Missing vs forbidden.
		{id: "r14:58", what: "a missing workspace and a forbidden one look alike", run: func(t *testing.T) (int, string) {
			c1, b1, _ := h.reqAs("alice-token", http.MethodGet, "/clusters/root:acme:platform/apis/databases.example.com/v1/namespaces/default/databases", nil, "")
			c2, b2, _ := h.reqAs("alice-token", http.MethodGet, "/clusters/root:acme:nosuch/apis/databases.example.com/v1/namespaces/default/databases", nil, "")
			b2 = strings.ReplaceAll(b2, "root:acme:nosuch", "root:acme:platform")
			if c1 != c2 || b1 != b2 {
				return 0, fmt.Sprintf("forbidden %d %s / missing %d %s", c1, b1, c2, b2)
			}
			return c1, b1
		}, code: 403},
		{id: "r14:59", what: "a missing group and a forbidden one look alike (bob, no RBAC in team-a)", run: func(t *testing.T) (int, string) {
			c1, b1, _ := h.reqAs("bob-token", http.MethodGet, r14DBs, nil, "")
			c2, b2, _ := h.reqAs("bob-token", http.MethodGet, r14A+"/apis/nosuch.example.com/v1/namespaces/default/databases", nil, "")
			b2 = strings.ReplaceAll(b2, "nosuch.example.com", "databases.example.com")
			if c1 != c2 || b1 != b2 {
				return 0, fmt.Sprintf("forbidden %d %s / missing %d %s", c1, b1, c2, b2)
			}
			return c1, b1
		}, code: 403},
	}
	for _, r := range rows {
		t.Run(strings.ReplaceAll(r.id, ":", "-")+"_"+strings.ReplaceAll(r.what, " ", "_"), func(t *testing.T) {
			code, body := r.run(t)
			if len(body) > 600 {
				body = body[:600] + "…"
			}
			if (r.code != 0 && code != r.code) || (r.contains != "" && !strings.Contains(body, r.contains)) || (r.absent != "" && strings.Contains(body, r.absent)) {
				t.Errorf("%s %s: %d %s, want %d contains %q absent %q", r.id, r.what, code, body, r.code, r.contains, r.absent)
			} else {
				t.Logf("%s %s: %d %s", r.id, r.what, code, body)
			}
			if r.after != nil {
				if err := r.after(t); err != nil {
					t.Errorf("%s %s: %v", r.id, r.what, err)
				}
			}
		})
	}
}

func hubCRD14(plural string) string {
	kind := strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s")
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s.%[1]s.example.com}
spec:
  group: %[1]s.example.com
  names: {plural: %[1]s, singular: %[2]s, kind: %[3]s}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`, plural, strings.ToLower(kind), kind)
}

// reqNoDefault is reqAs without a default Content-Type: a header set to
// nil is sent as absent.
func (h *hubProc) reqNoDefault(token, method, path string, hdr http.Header, body string) (int, string, http.Header) {
	h.t.Helper()
	if v, ok := hdr["Content-Type"]; ok && v == nil {
		delete(hdr, "Content-Type")
		return h.reqRaw(token, method, path, hdr, body)
	}
	return h.reqAs(token, method, path, hdr, body)
}

// reqRaw sends a request with exactly hdr (no Content-Type default).
func (h *hubProc) reqRaw(token, method, path string, hdr http.Header, body string) (int, string, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// r14Admin is every verb on everything: a workspace admin.
const r14Admin = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r14-admin}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
- {nonResourceURLs: ["*"], verbs: ["*"]}
`

// r14StatusCRD is a resource of the routed group with a status
// subresource (writes to it are not labelled by the proxy).
const r14StatusCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: statusdbs.databases.example.com}
spec:
  group: databases.example.com
  names: {plural: statusdbs, singular: statusdb, kind: Statusdb}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

const r14StatusRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sdb-user}
rules:
- {apiGroups: [databases.example.com], resources: [statusdbs, statusdbs/status], verbs: ["*"]}
`
