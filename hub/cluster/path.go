package cluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Path is a workspace path: "root" or "root:<label>[:<label>...]".
type Path string

// RootPath is the path of the root workspace, which exists from first start.
const RootPath Path = "root"

// Separator joins the segments of a Path.
const Separator = ":"

// ParsePath validates s as a workspace path. Every segment after "root" must
// be a DNS label, because it is also the name of a Workspace object.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return "", fmt.Errorf("empty workspace path")
	}
	segs := strings.Split(s, Separator)
	if segs[0] != string(RootPath) {
		return "", fmt.Errorf("workspace path %q must start with %q", s, RootPath)
	}
	for _, seg := range segs[1:] {
		if errs := validation.IsDNS1123Label(seg); len(errs) > 0 {
			return "", fmt.Errorf("workspace path %q: segment %q: %s", s, seg, strings.Join(errs, "; "))
		}
	}
	return Path(s), nil
}

// Join returns the path of the child workspace name.
func (p Path) Join(name string) Path { return Path(string(p) + Separator + name) }

// Parent returns the parent path and the last segment. Root has no parent.
func (p Path) Parent() (Path, string, bool) {
	i := strings.LastIndex(string(p), Separator)
	if i < 0 {
		return "", "", false
	}
	return p[:i], string(p[i+1:]), true
}

// Depth is the number of segments below root.
func (p Path) Depth() int { return strings.Count(string(p), Separator) }

// String returns the path as a string.
func (p Path) String() string { return string(p) }
