package hub

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/testutil"
)

// Attack review 17, files on disk (ids "review17:files/<n>"): a local user
// who may write to the backup directory (a shared /backup, sticky like
// /tmp) plants files where `wharf-hub snapshot save` will write, hoping to
// read the snapshot (every Secret of every workspace, the signing keys) or
// to make the saver overwrite a file of its choosing. Each row passes when
// the snapshot ends up a regular file of the saver's, 0600, and nothing
// planted was written into or through. The saver runs with umask 000, the
// worst an operator's shell may have. A last row checks the modes of a
// fresh data dir.

const r17Nobody = 65534

type r17FileRow struct {
	id, what string
	// plant prepares dir for a save to dir/"snap.db", as user nobody.
	plant func(t *testing.T, dir string)
	// check looks at what the save left besides the snapshot.
	check func(t *testing.T, dir string)
}

func r17Plant(t *testing.T, path string, symlinkTo string) {
	t.Helper()
	var err error
	if symlinkTo != "" {
		err = os.Symlink(symlinkTo, path)
	} else if err = os.WriteFile(path, nil, 0o666); err == nil {
		err = os.Chmod(path, 0o666)
	}
	if err == nil {
		err = os.Lchown(path, r17Nobody, r17Nobody)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func r17Untouched(path string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		fi, err := os.Lstat(filepath.Join(dir, path))
		if err == nil && fi.Size() > 0 {
			t.Errorf("%s was written through: %d bytes", path, fi.Size())
		}
	}
}

func TestAttackReview17Files(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{dataDir: filepath.Join(t.TempDir(), "data")})
	rows := []r17FileRow{
		{id: "1", what: "plain save under umask 000"},
		{id: "2", what: "a world-writable snap.db.part planted by another user",
			plant: func(t *testing.T, dir string) { r17Plant(t, filepath.Join(dir, "snap.db.part"), "") }},
		{id: "3", what: "snap.db.part a symlink to a file the saver would create",
			plant: func(t *testing.T, dir string) {
				r17Plant(t, filepath.Join(dir, "snap.db.part"), filepath.Join(dir, "stolen"))
			},
			check: r17Untouched("stolen")},
		{id: "4", what: "snap.db.part a symlink to a world-writable file of the attacker's",
			plant: func(t *testing.T, dir string) {
				r17Plant(t, filepath.Join(dir, "mine"), "")
				r17Plant(t, filepath.Join(dir, "snap.db.part"), filepath.Join(dir, "mine"))
			},
			check: r17Untouched("mine")},
		{id: "5", what: "a world-readable snap.db planted by another user",
			plant: func(t *testing.T, dir string) { r17Plant(t, filepath.Join(dir, "snap.db"), "") }},
		{id: "6", what: "snap.db a symlink to a file of the attacker's",
			plant: func(t *testing.T, dir string) {
				r17Plant(t, filepath.Join(dir, "mine"), "")
				r17Plant(t, filepath.Join(dir, "snap.db"), filepath.Join(dir, "mine"))
			},
			check: r17Untouched("mine")},
	}
	for _, r := range rows {
		t.Run("review17:files/"+r.id+"/"+r.what, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "backup")
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o1777); err != nil {
				t.Fatal(err)
			}
			if r.plant != nil {
				r.plant(t, dir)
			}
			file := filepath.Join(dir, "snap.db")
			cmd := exec.Command("sh", "-c", `umask 000; exec "$0" "$@"`, hubBinary(t), "snapshot", "save", file, "--data-dir", h.opts.dataDir)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Saved ") {
				t.Fatalf("snapshot save: %v\n%s", err, out)
			}
			fi, err := os.Lstat(file)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || int(st.Uid) != os.Getuid() || fi.Size() == 0 {
				t.Errorf("snapshot is %v uid %d, %d bytes; want a regular file 0600 of uid %d", fi.Mode(), st.Uid, fi.Size(), os.Getuid())
			}
			if r.check != nil {
				r.check(t, dir)
			}
			// Nothing else of the saver's is left behind, readable or not.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), "saving") {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}

	t.Run("review17:files/8/the probe spends the admin token on health paths only, at the hub only", func(t *testing.T) {
		// Whoever may run the probe with another path (a pod spec, an
		// exec probe) would otherwise hold an admin-token oracle.
		for _, p := range []string{"/metrics", "/livez/../metrics", "/livez/%2e%2e/metrics", "/readyz?verbose", "/livez/etcd",
			"/debug/pprof/", "https://127.0.0.1:1/livez", "//127.0.0.1:1/livez", "/clusters/root/api/v1/secrets"} {
			out, err := exec.Command(hubBinary(t), "probe", p, "--data-dir", h.opts.dataDir, "--secure-port", fmt.Sprint(h.port)).CombinedOutput()
			if err == nil || strings.Contains(string(out), h.Token) || strings.Contains(string(out), "# HELP") {
				t.Errorf("probe %s: %v\n%s", p, err, out)
			}
		}
		out, err := exec.Command(hubBinary(t), "probe", "/readyz", "--data-dir", h.opts.dataDir, "--secure-port", fmt.Sprint(h.port)).CombinedOutput()
		if err != nil || strings.Contains(string(out), h.Token) {
			t.Errorf("probe /readyz: %v\n%s", err, out)
		}
	})
	t.Run("review17:files/9/an admin token planted in the data dir before the first start is refused", func(t *testing.T) {
		// A data dir another user could create first (under /tmp, or a
		// restore through their symlink): they wrote admin-token, 0600,
		// their own. Were it adopted, they would be hub administrator.
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o1777); err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(dir, "data")
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		const planted = "planted-admin-token-0123456789"
		r17Plant(t, filepath.Join(data, "admin-token"), "")
		if err := os.WriteFile(filepath.Join(data, "admin-token"), []byte(planted+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(data, "admin-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(data, r17Nobody, r17Nobody); err != nil {
			t.Fatal(err)
		}
		port := freePort(t)
		cmd := exec.Command(hubBinary(t), "--data-dir", data, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1", "--shutdown-delay=0")
		log := &testutil.Buffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		probe := &hubProc{URL: fmt.Sprintf("https://127.0.0.1:%d", port), opts: hubOptions{dataDir: data}}
		deadline := time.Now().Add(120 * time.Second)
		for {
			select {
			case err := <-exited:
				if err == nil || !strings.Contains(log.String(), "refusing a token") {
					t.Fatalf("hub exited %v without naming the planted token:\n%s", err, log.String())
				}
				return
			default:
			}
			if code, _, err := probe.getAs(planted, "/api/v1/namespaces/kube-system/secrets"); err == nil && code == http.StatusOK {
				t.Fatal("the planted token is the hub's admin token")
			}
			if time.Now().After(deadline) {
				t.Fatalf("hub neither refused nor served:\n%s", log.String())
			}
			time.Sleep(300 * time.Millisecond)
		}
	})
	t.Run("review17:files/7/a fresh data dir is private", func(t *testing.T) {
		for p, want := range map[string]fs.FileMode{"": 0o700, "etcd": 0o700, "admin-token": 0o600,
			"admin.kubeconfig": 0o600, "pki/serving.key": 0o600} {
			fi, err := os.Stat(filepath.Join(h.opts.dataDir, p))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&^want != 0 {
				t.Errorf("%s is %v, want at most %v", p, fi.Mode().Perm(), want)
			}
		}
	})
}
