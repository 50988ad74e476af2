package charts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

// parseDockerfile reads the instructions of a Dockerfile: comments and
// blank lines dropped, backslash-continued lines joined.
func parseDockerfile(src string) []instruction {
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(strings.Join(strings.Fields(cur.String()), " "), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// TestDockerfileBuildsEveryBinary: the image's build stage builds every
// main package under cmd/ into the directory the final stage copies into
// /usr/local/bin, where the charts run them from, and nothing in the final
// stage runs a shell (distroless has none).
func TestDockerfileBuildsEveryBinary(t *testing.T) {
	root := repoRoot(t)
	ins := parseDockerfile(mustRead(t, filepath.Join(root, "Dockerfile")))
	var stages [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s before the first FROM", in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.Contains(build[0].args, " AS build") {
		t.Fatalf("first stage %q is not named build", build[0].args)
	}

	// The binaries the build stage makes, and where.
	goBuild := regexp.MustCompile(`go build .*-o (\S+) (.+)$`)
	built := map[string]bool{}
	var outDir string
	for _, in := range build {
		if in.cmd != "RUN" {
			continue
		}
		m := goBuild.FindStringSubmatch(in.args)
		if m == nil {
			continue
		}
		if !strings.Contains(in.args, "CGO_ENABLED=0") {
			t.Errorf("go build without CGO_ENABLED=0: the runtime image has no libc")
		}
		outDir = m[1]
		for _, pkg := range strings.Fields(m[2]) {
			built[pkg] = true
		}
	}
	if outDir == "" {
		t.Fatal("no go build -o in the build stage")
	}
	cmds, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		if _, err := os.Stat(filepath.Join(root, "cmd", c.Name(), "main.go")); err != nil {
			continue
		}
		n++
		if !built["./cmd/..."] && !built["./cmd/"+c.Name()] {
			t.Errorf("cmd/%s is not built into the image", c.Name())
		}
	}
	if n == 0 {
		t.Fatal("no main package under cmd/")
	}

	copied := false
	for _, in := range final {
		switch in.cmd {
		case "RUN":
			t.Errorf("final stage runs %q: the runtime image has no shell", in.args)
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && f[0] == "--from=build" && strings.TrimSuffix(f[1], "/") == strings.TrimSuffix(outDir, "/") && f[2] == "/usr/local/bin/" {
				copied = true
			}
		case "USER":
			if in.args != "65532:65532" {
				t.Errorf("USER %s; the charts run as 65532", in.args)
			}
		}
	}
	if !copied {
		t.Errorf("the final stage does not COPY --from=build %s /usr/local/bin/", outDir)
	}
}

func TestParseDockerfile(t *testing.T) {
	got := parseDockerfile("# c\nFROM a AS build\n\nRUN x \\\n  # inner\n  y\nCOPY --from=build /o/ /b/\n")
	want := []instruction{{"FROM", "a AS build"}, {"RUN", "x y"}, {"COPY", "--from=build /o/ /b/"}}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%d: %q, want %q", i, got[i], want[i])
		}
	}
}
