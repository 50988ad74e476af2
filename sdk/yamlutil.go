package sdk

import (
	"bufio"
	"bytes"
)

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// isOnlyComments reports whether a YAML document holds nothing but comments,
// which YAMLToJSON would turn into "null".
func isOnlyComments(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}
