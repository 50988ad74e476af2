package etcd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotRoundTrip: keys saved from a running embedded member come
// back in a member StartEmbedded starts on the restored dir, with the
// revision bumped as asked, and nothing written after the save.
func TestSnapshotRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	a, err := StartEmbedded(ctx, filepath.Join(base, "a", "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	url, err := EmbeddedClientURL(filepath.Join(base, "a"))
	if err != nil || url != a.ClientURL {
		t.Fatalf("EmbeddedClientURL: %q %v, want %q", url, err, a.ClientURL)
	}
	ca := client(t, url)
	for i := 0; i < 10; i++ {
		if _, err := ca.Put(ctx, fmt.Sprintf("/registry/k%d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(base, "s.db")
	info, err := SaveSnapshot(ctx, clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second}, file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Keys < 10 || info.Revision < 11 {
		t.Fatalf("snapshot info %+v", info)
	}
	if _, err := ca.Put(ctx, "/registry/late", "x"); err != nil {
		t.Fatal(err)
	}
	ca.Close()
	a.Close()

	if _, err := EmbeddedClientURL(filepath.Join(base, "none")); err == nil {
		t.Fatal("EmbeddedClientURL found a socket in an empty dir")
	}
	const bump = 1000
	if err := Restore(file, filepath.Join(base, "b"), RestoreOptions{RevisionBump: bump}); err != nil {
		t.Fatal(err)
	}
	if err := Restore(file, filepath.Join(base, "b"), RestoreOptions{}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("second restore: %v", err)
	}
	b, err := StartEmbedded(ctx, filepath.Join(base, "b", "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb := client(t, b.ClientURL)
	defer cb.Close()
	resp, err := cb.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 10 {
		t.Fatalf("restored %d keys, want the 10 saved", len(resp.Kvs))
	}
	if resp.Header.Revision < info.Revision+bump {
		t.Fatalf("restored revision %d, want at least %d", resp.Header.Revision, info.Revision+bump)
	}
	// Old revisions are compacted: a watch from before the restore is told.
	if _, err := cb.Get(ctx, "/registry/k1", clientv3.WithRev(info.Revision)); err == nil {
		t.Fatal("a revision from before the restore is still readable")
	}
	if _, err := cb.Put(ctx, "/registry/new", "y"); err != nil {
		t.Fatalf("restored member is not writable: %v", err)
	}
}

func client(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSaveSnapshotPicksLiveMember: with several endpoints, the save takes
// a member that answers, past ones that do not; with none answering, the
// error names every endpoint and its cause, and no file is left.
func TestSaveSnapshotPicksLiveMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	a, err := StartEmbedded(ctx, filepath.Join(base, "a", "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ca := client(t, a.ClientURL)
	if _, err := ca.Put(ctx, "/registry/k", "v"); err != nil {
		t.Fatal(err)
	}
	ca.Close()
	dead1 := "unix://" + filepath.Join(base, "dead1.sock")
	dead2 := "unix://" + filepath.Join(base, "dead2.sock")
	for _, tc := range []struct {
		name      string
		endpoints []string
		wantErr   []string
	}{
		{"live member last", []string{dead1, dead2, a.ClientURL}, nil},
		{"live member first", []string{a.ClientURL, dead1}, nil},
		{"none live", []string{dead1, dead2}, []string{"no etcd member could be saved", dead1 + ": ", dead2 + ": ", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.db")
			info, err := SaveSnapshot(ctx, clientv3.Config{Endpoints: tc.endpoints, DialTimeout: 3 * time.Second}, file)
			if tc.wantErr == nil {
				if err != nil || info.Keys == 0 {
					t.Fatalf("SaveSnapshot: %+v %v", info, err)
				}
				return
			}
			var nm *NoMemberError
			if !errors.As(err, &nm) || len(nm.Causes) != len(tc.endpoints) {
				t.Fatalf("SaveSnapshot: %v, want a NoMemberError for each endpoint", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, f := range []string{file, file + ".part"} {
				if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a failed save left %s: %v", f, err)
				}
			}
		})
	}
}

// TestRestoreRefusesNonEmptyDataDir: a data dir with anything in it (but
// lost+found) is refused and left exactly as it was; a failed restore into
// a new or empty dir leaves nothing behind.
func TestRestoreRefusesNonEmptyDataDir(t *testing.T) {
	base := t.TempDir()
	snap := filepath.Join(base, "s.db")
	// Not a snapshot: every restore below that gets past the checks fails.
	if err := os.WriteFile(snap, []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk := func(t *testing.T, files ...string) string {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p := filepath.Join(dir, f)
			if strings.HasSuffix(f, "/") {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name    string
		files   []string
		want    string
		leftFor []string // what must be there after a failed restore
	}{
		{"a file", []string{"admin-token"}, "is not empty (admin-token)", nil},
		{"an etcd member", []string{"etcd/member-data/member/snap/db"}, "already holds an etcd member", nil},
		{"an etcd dir without member", []string{"etcd/x"}, "is not empty (etcd)", nil},
		{"empty but lost+found", []string{"lost+found/"}, "restoring", []string{"lost+found"}},
		{"empty", nil, "restoring", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(t, tc.files...)
			before := tree(t, dir)
			err := Restore(snap, dir, RestoreOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore: %v, want an error containing %q", err, tc.want)
			}
			after := tree(t, dir)
			if tc.leftFor == nil {
				if after != before {
					t.Fatalf("a refused restore changed the dir:\n%s\nwas:\n%s", after, before)
				}
				return
			}
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if strings.Join(names, ",") != strings.Join(tc.leftFor, ",") {
				t.Fatalf("a failed restore left %v, want %v", names, tc.leftFor)
			}
		})
	}
	// Into a dir that does not exist: a failure leaves none.
	dir := filepath.Join(base, "new")
	if err := Restore(snap, dir, RestoreOptions{}); err == nil {
		t.Fatal("restored a file that is no snapshot")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed restore left %s: %v", dir, err)
	}
}

// tree is every path under dir with its mode, size and mtime.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in, network, addr string
		secure, err       bool
	}{
		{"https://10.0.0.1:2379", "tcp", "10.0.0.1:2379", true, false},
		{"http://etcd:2379", "tcp", "etcd:2379", false, false},
		{"etcd:2379", "tcp", "etcd:2379", false, false},
		{"unix:///run/etcd.sock", "unix", "/run/etcd.sock", false, false},
		{"unixs://etcd.sock", "unix", "etcd.sock", true, false},
		{"ftp://etcd:2379", "", "", false, true},
	} {
		network, addr, secure, err := parseEndpoint(tc.in)
		if (err != nil) != tc.err || network != tc.network || addr != tc.addr || secure != tc.secure {
			t.Errorf("parseEndpoint(%q) = %q %q %v %v", tc.in, network, addr, secure, err)
		}
	}
}
