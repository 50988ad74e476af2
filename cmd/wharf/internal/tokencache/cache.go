package tokencache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Entry is what one login leaves behind.
type Entry struct {
	IDToken      string    `json:"id_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry"` // of the ID token
}

// Cache is a directory of entries.
type Cache struct{ Dir string }

// ErrNotFound means there is no entry: the user has not logged in.
var ErrNotFound = errors.New("no cached token")

// Key names the entry for an issuer and client id.
func Key(issuer, clientID string) string {
	sum := sha256.Sum256([]byte(issuer + "\x00" + clientID))
	return hex.EncodeToString(sum[:16])
}

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key+".json") }

// ensureDir creates the directory 0700, and refuses one others can read.
func (c Cache) ensureDir() error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("creating token cache %s: %w", c.Dir, err)
	}
	fi, err := os.Stat(c.Dir)
	if err != nil {
		return fmt.Errorf("token cache %s: %w", c.Dir, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token cache %s is accessible by other users (mode %v); chmod 700 it", c.Dir, fi.Mode().Perm())
	}
	return nil
}

// Load reads the entry for key.
func (c Cache) Load(key string) (Entry, error) {
	var e Entry
	b, err := os.ReadFile(c.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return e, ErrNotFound
	}
	if err != nil {
		return e, fmt.Errorf("reading token cache: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("token cache %s is corrupt: %w", c.path(key), err)
	}
	return e, nil
}

// Store writes the entry for key atomically with mode 0600.
func (c Cache) Store(key string, e Entry) error {
	if err := c.ensureDir(); err != nil {
		return err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding token cache entry: %w", err)
	}
	tmp, err := os.CreateTemp(c.Dir, key+".*.tmp") // CreateTemp uses 0600
	if err != nil {
		return fmt.Errorf("writing token cache: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing token cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path(key)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing token cache: %w", err)
	}
	return nil
}

// Lock takes an exclusive advisory lock on key until unlock is called.
func (c Cache) Lock(key string) (unlock func(), err error) {
	if err := c.ensureDir(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, key+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking token cache: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking token cache: %w", err)
	}
	return func() { _ = unlockFile(f); f.Close() }, nil
}
