package hub

import (
	"fmt"
	"strings"
)

// openCRD is a namespaced CRD, version v1, whose objects take any fields:
// for tests that need instances of a kind of their own, not its schema.
func openCRD(group, plural, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[1]s
spec:
  group: %[1]s
  names: {kind: %[3]s, plural: %[2]s, singular: %[4]s, listKind: %[3]sList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group, plural, kind, strings.ToLower(kind))
}
