package cluster

import (
	"crypto/rand"
	"fmt"
	"math/big"
)

// ID is a logical cluster id: 16 lowercase base36 characters.
type ID string

// IDLength is the number of base36 characters in an ID.
const IDLength = 16

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// Global is the pseudo cluster that holds hub-wide objects such as
// CustomResourceDefinitions. It can never collide with a real ID because it
// is not base36.
const Global ID = "system:global"

// NewID returns a fresh random ID. 36^16 ≈ 2^82, so collisions are not a
// practical concern; allocation still uses a create-if-absent transaction.
func NewID() (ID, error) {
	b := make([]byte, IDLength)
	max := big.NewInt(int64(len(base36)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("generating cluster id: %w", err)
		}
		b[i] = base36[n.Int64()]
	}
	return ID(b), nil
}

// IsValidID reports whether s has the shape of a logical cluster id.
func IsValidID(s string) bool {
	if len(s) != IDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// String returns the id as a string.
func (id ID) String() string { return string(id) }
