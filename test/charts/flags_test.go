package charts

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var flagName = regexp.MustCompile(`^\s*(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9-]*)`)

// helpFlags are the flags a binary's --help lists.
func helpFlags(t *testing.T, bin string, args ...string) map[string]bool {
	out, err := run(t, nil, bin, append(args, "--help")...)
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	flags := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if m := flagName.FindStringSubmatch(l); m != nil {
			flags[m[1]] = true
		}
	}
	if len(flags) < 3 {
		t.Fatalf("%s --help listed no flags:\n%s", bin, out)
	}
	return flags
}

// TestChartsUseRealFlags: every flag the charts put on a command line,
// with every value set, is one the binary (from make build) has.
func TestChartsUseRealFlags(t *testing.T) {
	helm, _ := chartTools(t)
	root := repoRoot(t)
	known := map[string]map[string]bool{
		"/usr/local/bin/wharf-hub":   helpFlags(t, binary(t, "wharf-hub")),
		"/usr/local/bin/wharf-agent": helpFlags(t, binary(t, "wharf-agent"), "run"),
		// The hub's exec probes.
		"/usr/local/bin/wharf-hub probe": helpFlags(t, binary(t, "wharf-hub"), "probe"),
		"/usr/local/bin/etcd":            nil, // etcd's own image; its flags are etcd's
	}
	seen := 0
	for _, chart := range []string{"wharf-hub", "wharf-agent"} {
		dir := filepath.Join(root, "charts", chart)
		for _, s := range valueSets(t, dir) {
			if chart == "wharf-agent" && s.name == "defaults" {
				continue
			}
			out, err := run(t, nil, helm, append([]string{"template", "rel", dir, "--kube-version", kubeVersion}, valuesArgs(s)...)...)
			if err != nil {
				t.Fatalf("%s/%s: helm template: %v\n%s", chart, s.name, err, out)
			}
			for _, c := range containers(t, out) {
				flags, ok := known[c.command]
				if !ok {
					t.Errorf("%s/%s: container runs unknown command %q", chart, s.name, c.command)
					continue
				}
				if flags == nil {
					continue
				}
				for _, a := range c.args {
					name, isFlag := strings.CutPrefix(a, "--")
					if !isFlag {
						continue
					}
					name, _, _ = strings.Cut(name, "=")
					seen++
					if !flags[name] {
						t.Errorf("%s/%s: %s has no flag --%s", chart, s.name, c.command, name)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no flags found in the rendered charts")
	}
}

type container struct {
	command string
	args    []string
}

// containers are the containers of every pod template in a rendered
// stream.
func containers(t *testing.T, stream string) []container {
	var out []container
	for _, d := range yamlDocs(t, stream) {
		spec, _ := d["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		pod, _ := tmpl["spec"].(map[string]any)
		cs, _ := pod["containers"].([]any)
		for _, c := range cs {
			m := c.(map[string]any)
			var ct container
			if cmd, _ := m["command"].([]any); len(cmd) > 0 {
				ct.command, _ = cmd[0].(string)
			}
			args, _ := m["args"].([]any)
			for _, a := range args {
				s, _ := a.(string)
				ct.args = append(ct.args, s)
			}
			out = append(out, ct)
			// An exec probe is a command line too: "<binary> <subcommand>"
			// and its flags.
			for _, pr := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
				probe, _ := m[pr].(map[string]any)
				exec, _ := probe["exec"].(map[string]any)
				cmd, _ := exec["command"].([]any)
				if len(cmd) < 2 {
					continue
				}
				pc := container{command: cmd[0].(string) + " " + cmd[1].(string)}
				for _, a := range cmd[2:] {
					pc.args = append(pc.args, a.(string))
				}
				out = append(out, pc)
			}
		}
	}
	return out
}
