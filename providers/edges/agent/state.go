package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// File names inside the state directory.
const (
	stateFile      = "state.json"
	credentialFile = "credential"
)

// State is what the agent keeps from its join bundle: everything but the
// token, so later runs need no --join.
type State struct {
	HubURL  string `json:"hub"`
	CA      string `json:"ca"` // PEM, pinned
	Cluster string `json:"cluster"`
	Edge    string `json:"edge"`
	Type    string `json:"type"`
}

func stateFromBundle(b protocol.Bundle) State {
	return State{HubURL: b.HubURL, CA: b.CA, Cluster: b.Cluster, Edge: b.Edge, Type: b.Type}
}

// sameEdge reports whether s and o name the same edge.
func (s State) sameEdge(o State) bool { return s.Cluster == o.Cluster && s.Edge == o.Edge }

// stateDir is the agent's 0700 directory of state.json and the credential.
type stateDir struct{ path string }

func openStateDir(path string) (stateDir, error) {
	if path == "" {
		return stateDir{}, errors.New("--state-dir is required")
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return stateDir{}, fmt.Errorf("state dir: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stateDir{}, fmt.Errorf("state dir: %w", err)
	}
	// MkdirAll leaves an existing directory's mode alone. Changing it
	// here could lock others out of a shared directory named by mistake
	// (--state-dir /tmp), so an open one is refused instead.
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return stateDir{}, fmt.Errorf("state dir %s: must be a directory only its owner can access (mode 0700, is %v)", path, fi.Mode())
	}
	return stateDir{path: path}, nil
}

// loadState returns the saved state, or ok=false when there is none.
func (d stateDir) loadState() (s State, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(d.path, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("state: %w", err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, false, fmt.Errorf("state %s: %w", filepath.Join(d.path, stateFile), err)
	}
	return s, true, nil
}

func (d stateDir) saveState(s State) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return writeAtomic(filepath.Join(d.path, stateFile), append(raw, '\n'))
}

// loadCredential returns the saved credential, or "" when there is none.
func (d stateDir) loadCredential() (string, error) {
	raw, err := os.ReadFile(filepath.Join(d.path, credentialFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("credential: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// writeAtomic writes data to a 0600 temp file beside path and renames it
// over path, so a crash leaves the old file or the new one, never half of
// either (a torn credential would lock the agent out).
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// credStore holds the current agent credential and saves every change to
// disk before it is used.
type credStore struct {
	dir stateDir

	// spare is an unused join token (see tunnel.spareToken); memory only.
	spare string

	mu   sync.Mutex
	cred string
}

func (c *credStore) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred
}

// set saves cred (0600, atomically) and then makes it current. If the
// save fails the old credential stays current.
func (c *credStore) set(cred string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cred == c.cred {
		return nil
	}
	if err := writeAtomic(filepath.Join(c.dir.path, credentialFile), []byte(cred+"\n")); err != nil {
		return err
	}
	c.cred = cred
	return nil
}
