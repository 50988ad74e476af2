package tokencache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStoreLoadPermissions(t *testing.T) {
	c := Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	key := Key("https://idp", "cli")
	if _, err := c.Load(key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty cache: %v, want ErrNotFound", err)
	}
	want := Entry{IDToken: "id", RefreshToken: "rt", Expiry: time.Unix(1700000000, 0).UTC()}
	if err := c.Store(key, want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Load(key)
	if err != nil || got != want {
		t.Fatalf("Load = %+v, %v; want %+v", got, err, want)
	}
	for path, mode := range map[string]os.FileMode{c.Dir: 0o700, filepath.Join(c.Dir, key+".json"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v %v, want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
	if Key("https://idp", "other") == key {
		t.Error("keys collide across client ids")
	}
}

func TestLooseDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (Cache{Dir: dir}).Store("k", Entry{IDToken: "x"}); err == nil {
		t.Fatal("stored a token in a world-readable directory")
	}
}
