package rootless

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUserDir: the user's directory is made private, and one that is a
// link, someone else's or open to others is refused, naming the fix.
func TestUserDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "")
	want := filepath.Join(tmp, "wanlab-"+strconv.Itoa(os.Geteuid()))

	dir, err := UserDir()
	if err != nil || dir != want {
		t.Fatalf("UserDir = %q, %v; want %q", dir, err, want)
	}
	if st, err := os.Lstat(dir); err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Fatalf("%s: %v, %v; want a directory of mode 0700", dir, st.Mode(), err)
	}
	if again, err := UserDir(); err != nil || again != dir {
		t.Errorf("second UserDir = %q, %v", again, err)
	}

	os.Chmod(dir, 0o755)
	if _, err := UserDir(); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("a directory open to others: %v", err)
	}
	os.Remove(dir)

	os.Symlink(tmp, dir)
	if _, err := UserDir(); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a planted link: %v", err)
	}
	os.Remove(dir)

	if os.Geteuid() == 0 {
		os.Mkdir(dir, 0o700)
		os.Chown(dir, 64199, 64199)
		if _, err := UserDir(); err == nil || !strings.Contains(err.Error(), "belongs to uid 64199") {
			t.Errorf("another user's directory: %v", err)
		}
		os.Remove(dir)
	}

	// A runtime directory of the user's own is preferred.
	xdg := filepath.Join(tmp, "xdg")
	os.Mkdir(xdg, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	if dir, err := UserDir(); err != nil || dir != filepath.Join(xdg, "wanlab") {
		t.Errorf("with XDG_RUNTIME_DIR: %q, %v", dir, err)
	}
}

// TestCleanEnv: the package's own variables never reach a command's
// environment twice, nor a keeper's.
func TestCleanEnv(t *testing.T) {
	got := cleanEnv([]string{"PATH=/bin", "WANLAB_ROOTLESS_DIR=/x", "WANLAB_ROOTLESS_KEEPER=1", "WANLAB_ROOTLESS_LOCKFD=5", "WANLAB_ROOTLESS_CWD=/y", "HOME=/h", "WANLAB_ROOTLESS=1"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/h WANLAB_ROOTLESS=1" {
		t.Errorf("cleanEnv = %q", got)
	}
}
