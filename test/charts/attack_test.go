package charts

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Attack review 17, the charts (ids "review17:chart/<n>"): what the real
// helm renders, with the defaults and with options, read as an attacker
// who can run a pod in the cluster (the hub's pod network), read
// ConfigMaps and pod specs, or takes over the edge agent. A row fails if
// the rendering hands the attacker something: a secret outside a Secret,
// a key readable by every user of a container, an automounted API token
// the hub does not need, an open etcd port, an agent that can do more
// than impersonate.

// rendered is one helm template output, decoded by kind.
type rendered struct {
	configMaps   []corev1.ConfigMap
	pods         map[string]corev1.PodSpec // by workload name
	sas          []corev1.ServiceAccount
	policies     []networkingv1.NetworkPolicy
	clusterRoles []rbacv1.ClusterRole
	roles        []rbacv1.Role
	crbs         []rbacv1.ClusterRoleBinding
	monitors     []map[string]any
}

func render(t *testing.T, chart string, args ...string) rendered {
	t.Helper()
	if r17Helm == "" {
		r17Helm, _ = chartTools(t)
	}
	helm := r17Helm
	dir := filepath.Join(repoRoot(t), "charts", chart)
	out, err := run(t, nil, helm, append([]string{"template", "rel", dir, "--namespace", "wharf", "--kube-version", kubeVersion}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s %v: %v\n%s", chart, args, err, out)
	}
	r := rendered{pods: map[string]corev1.PodSpec{}}
	for _, doc := range yamlDocs(t, out) {
		raw, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		into := func(v any) {
			if err := yaml.UnmarshalStrict(raw, v); err != nil {
				t.Fatalf("%s: %v", doc["kind"], err)
			}
		}
		switch doc["kind"] {
		case "ConfigMap":
			var o corev1.ConfigMap
			into(&o)
			r.configMaps = append(r.configMaps, o)
		case "StatefulSet":
			var o appsv1.StatefulSet
			into(&o)
			r.pods[o.Name] = o.Spec.Template.Spec
		case "Deployment":
			var o appsv1.Deployment
			into(&o)
			r.pods[o.Name] = o.Spec.Template.Spec
		case "ServiceAccount":
			var o corev1.ServiceAccount
			into(&o)
			r.sas = append(r.sas, o)
		case "NetworkPolicy":
			var o networkingv1.NetworkPolicy
			into(&o)
			r.policies = append(r.policies, o)
		case "ClusterRole":
			var o rbacv1.ClusterRole
			into(&o)
			r.clusterRoles = append(r.clusterRoles, o)
		case "Role":
			var o rbacv1.Role
			into(&o)
			r.roles = append(r.roles, o)
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			into(&o)
			r.crbs = append(r.crbs, o)
		case "ServiceMonitor":
			r.monitors = append(r.monitors, doc)
		}
	}
	if len(r.pods) == 0 {
		t.Fatal("no workloads rendered")
	}
	return r
}

// r17Helm is the helm chartTools found, looked up once per run.
var r17Helm string

// chartAttack is one row: a rendering and what must hold of it.
type chartAttack struct {
	id, what, chart string
	// sets are helm arguments; each is one rendering the row checks.
	sets  [][]string
	check func(r rendered) error
}

// Secret-looking flags, env names and data keys.
var (
	secretFlag = regexp.MustCompile(`^--[a-z-]*(secret|token|password)[a-z-]*=.+`)
	secretName = regexp.MustCompile(`(?i)(secret|token|password|passwd|private|\.key$)`)
)

func hubSets(t *testing.T) [][]string {
	var out [][]string
	for _, s := range valueSets(t, filepath.Join(repoRoot(t), "charts", "wharf-hub")) {
		out = append(out, valuesArgs(s))
	}
	return append(out, []string{"--set", "networkPolicy.enabled=true"},
		[]string{"-f", filepath.Join(repoRoot(t), "charts", "wharf-hub", "ci", "external-etcd-values.yaml"), "--set", "networkPolicy.enabled=true"})
}

func agentSets(t *testing.T) [][]string {
	var out [][]string
	for _, s := range valueSets(t, filepath.Join(repoRoot(t), "charts", "wharf-agent"))[1:] { // the defaults do not render
		out = append(out, valuesArgs(s))
	}
	minimal := filepath.Join(repoRoot(t), "charts", "wharf-agent", "ci", "minimal-values.yaml")
	return append(out, []string{"-f", minimal, "--set", "impersonatePrefix=wharf:"})
}

func TestChartAttacks(t *testing.T) {
	rows := []chartAttack{
		{id: "1", what: "no private key, token or secret in a ConfigMap", chart: "wharf-hub", check: noSecretConfigMaps},
		{id: "2", what: "no secret in a container's args or literal env", chart: "wharf-hub", check: noSecretArgs},
		{id: "3", what: "hub and etcd pods mount no API token; the hub has no RBAC in its cluster", chart: "wharf-hub", check: func(r rendered) error {
			for name, p := range r.pods {
				if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
					return fmt.Errorf("%s automounts a service-account token", name)
				}
			}
			if len(r.clusterRoles)+len(r.roles)+len(r.crbs) > 0 {
				return fmt.Errorf("hub chart grants RBAC: %d cluster roles, %d roles, %d bindings", len(r.clusterRoles), len(r.roles), len(r.crbs))
			}
			return nil
		}},
		{id: "4", what: "hub and etcd pods: non-root, no privilege, no host namespaces or paths", chart: "wharf-hub", check: hardenedPods},
		{id: "5", what: "key and token volumes are not world-readable", chart: "wharf-hub", check: privateSecretVolumes},
		{id: "6", what: "with network policies, etcd's client, peer and metrics ports are closed to other pods", chart: "wharf-hub", check: etcdClosed},
		{id: "7", what: "the ServiceMonitor takes its token from a Secret and verifies the hub", chart: "wharf-hub", check: monitorsSafe},
		{id: "8", what: "the hub pods hold no etcd server or peer key; etcd pods hold no hub key", chart: "wharf-hub", check: keysApart},
		{id: "9", what: "agent: no secret in a ConfigMap, args or literal env", chart: "wharf-agent", check: func(r rendered) error {
			if err := noSecretConfigMaps(r); err != nil {
				return err
			}
			return noSecretArgs(r)
		}},
		{id: "10", what: "agent: non-root, no privilege, no host namespaces or paths; join secrets not world-readable", chart: "wharf-agent", check: func(r rendered) error {
			if err := hardenedPods(r); err != nil {
				return err
			}
			return privateSecretVolumes(r)
		}},
		{id: "11", what: "agent: impersonation limited to users and groups, never service accounts, uids or extras", chart: "wharf-agent", check: agentRBAC},
	}
	for _, row := range rows {
		t.Run("review17:chart/"+row.id+"/"+row.what, func(t *testing.T) {
			sets := row.sets
			if sets == nil && row.chart == "wharf-hub" {
				sets = hubSets(t)
			} else if sets == nil {
				sets = agentSets(t)
			}
			for _, args := range sets {
				if err := row.check(render(t, row.chart, args...)); err != nil {
					t.Errorf("%s %v: %v", row.chart, args, err)
				}
			}
		})
	}
}

func noSecretConfigMaps(r rendered) error {
	for _, cm := range r.configMaps {
		for k, v := range cm.Data {
			if strings.Contains(v, "PRIVATE KEY") || (secretName.MatchString(k) && !strings.HasSuffix(k, ".yaml")) {
				return fmt.Errorf("ConfigMap %s key %s looks secret", cm.Name, k)
			}
		}
	}
	return nil
}

func noSecretArgs(r rendered) error {
	for name, p := range r.pods {
		for _, c := range append(p.InitContainers, p.Containers...) {
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				// File and directory flags name where a secret is mounted;
				// etcd's cluster token only tells clusters apart.
				if secretFlag.MatchString(a) && !strings.Contains(a, "-file=") && !strings.Contains(a, "-dir=") && !strings.HasPrefix(a, "--initial-cluster-token=") {
					return fmt.Errorf("%s/%s passes %q", name, c.Name, a)
				}
			}
			for _, e := range c.Env {
				if e.Value != "" && secretName.MatchString(e.Name) {
					return fmt.Errorf("%s/%s env %s is a literal", name, c.Name, e.Name)
				}
			}
		}
	}
	return nil
}

func hardenedPods(r rendered) error {
	for name, p := range r.pods {
		if p.HostNetwork || p.HostPID || p.HostIPC {
			return fmt.Errorf("%s shares a host namespace", name)
		}
		if sc := p.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			return fmt.Errorf("%s pod securityContext %+v", name, sc)
		}
		for _, v := range p.Volumes {
			if v.HostPath != nil {
				return fmt.Errorf("%s mounts host path %s", name, v.HostPath.Path)
			}
		}
		for _, c := range append(p.InitContainers, p.Containers...) {
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || (sc.Privileged != nil && *sc.Privileged) ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 ||
				len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				return fmt.Errorf("%s/%s securityContext %+v", name, c.Name, sc)
			}
		}
	}
	return nil
}

// privateSecretVolumes: a Secret volume holding anything but CA
// certificates has no world bits (the pod's fsGroup may read it).
func privateSecretVolumes(r rendered) error {
	for name, p := range r.pods {
		for _, v := range p.Volumes {
			if v.Secret == nil {
				continue
			}
			onlyCA := len(v.Secret.Items) > 0
			for _, it := range v.Secret.Items {
				onlyCA = onlyCA && strings.Contains(strings.ToLower(it.Path), "ca")
			}
			if onlyCA {
				continue
			}
			mode := int32(0o644) // the API's default
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
			for _, it := range v.Secret.Items {
				if it.Mode != nil && *it.Mode&0o007 != 0 {
					return fmt.Errorf("%s volume %s item %s mode %o", name, v.Name, it.Key, *it.Mode)
				}
			}
			if mode&0o007 != 0 {
				return fmt.Errorf("%s volume %s (Secret %s) mode %o", name, v.Name, v.Secret.SecretName, mode)
			}
		}
	}
	return nil
}

func etcdClosed(r rendered) error {
	var etcd *networkingv1.NetworkPolicy
	for i, np := range r.policies {
		if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] == "etcd" {
			etcd = &r.policies[i]
		}
	}
	bundled := false
	for name := range r.pods {
		bundled = bundled || strings.HasSuffix(name, "-etcd")
	}
	if len(r.policies) == 0 || !bundled {
		return nil // policies off, or no etcd of the chart's: nothing to check
	}
	if etcd == nil {
		return fmt.Errorf("network policies on, none selects the etcd pods")
	}
	for _, rule := range etcd.Spec.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			return fmt.Errorf("etcd policy rule open to all: %+v", rule)
		}
		for _, port := range rule.Ports {
			want := map[string]string{"client": "hub", "peer": "etcd"}[port.Port.String()]
			if want == "" {
				return fmt.Errorf("etcd policy opens port %s", port.Port.String())
			}
			for _, f := range rule.From {
				if f.NamespaceSelector != nil || f.IPBlock != nil || f.PodSelector == nil || f.PodSelector.MatchLabels["app.kubernetes.io/component"] != want {
					return fmt.Errorf("etcd port %s open to %+v", port.Port.String(), f)
				}
			}
		}
	}
	return nil
}

func monitorsSafe(r rendered) error {
	for _, m := range r.monitors {
		raw, _ := yaml.Marshal(m)
		s := string(raw)
		if strings.Contains(s, "insecureSkipVerify: true") || strings.Contains(s, "bearerToken:") || strings.Contains(s, "scheme: http\n") ||
			!strings.Contains(s, "bearerTokenSecret:") || !strings.Contains(s, "ca:") {
			return fmt.Errorf("ServiceMonitor:\n%s", s)
		}
	}
	return nil
}

func keysApart(r rendered) error {
	for name, p := range r.pods {
		etcdPod := strings.HasSuffix(name, "-etcd")
		for _, v := range p.Volumes {
			if v.Secret == nil {
				continue
			}
			s := v.Secret.SecretName
			if !etcdPod && strings.HasSuffix(s, "-etcd-tls") {
				return fmt.Errorf("hub pod %s mounts etcd's own key %s", name, s)
			}
			if etcdPod && (strings.HasSuffix(s, "-hub-tls") || strings.HasSuffix(s, "-client-tls")) {
				return fmt.Errorf("etcd pod %s mounts %s", name, s)
			}
		}
	}
	return nil
}

// agentRBAC: in impersonate mode the agent may impersonate users and
// groups and nothing else; in agent mode it impersonates nothing. No rule
// has a wildcard verb or resource, unless the operator wrote it.
func agentRBAC(r rendered) error {
	for _, cr := range r.clusterRoles {
		for _, rule := range cr.Rules {
			for _, v := range rule.Verbs {
				if v == "impersonate" || v == "*" {
					if len(rule.APIGroups) != 1 || rule.APIGroups[0] != "" {
						return fmt.Errorf("%s impersonates in groups %v", cr.Name, rule.APIGroups)
					}
					for _, res := range rule.Resources {
						if res != "users" && res != "groups" {
							return fmt.Errorf("%s may %s %s", cr.Name, v, res)
						}
					}
					if len(rule.Verbs) != 1 {
						return fmt.Errorf("%s: impersonate rule with verbs %v", cr.Name, rule.Verbs)
					}
				}
			}
		}
	}
	for _, b := range r.crbs {
		if b.RoleRef.Name == "cluster-admin" || b.RoleRef.Name == "admin" || b.RoleRef.Name == "edit" {
			return fmt.Errorf("%s binds %s", b.Name, b.RoleRef.Name)
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				return fmt.Errorf("%s binds %s %s", b.Name, s.Kind, s.Name)
			}
		}
	}
	return nil
}
