package outfile

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
)

// nobody is the second user that plants links: a real process of its own.
const nobody = 65534

// linkTestDir returns a directory that nobody may search, holding
// sticky, a 1777 directory as /tmp is, and logs the machine's
// fs.protected_symlinks: outfile must not depend on it.
func linkTestDir(t *testing.T) (base, sticky string) {
	t.Helper()
	roottest.NeedRoot(t)
	if b, err := os.ReadFile("/proc/sys/fs/protected_symlinks"); err == nil {
		t.Logf("fs.protected_symlinks = %s (outfile applies its rule whatever the sysctl says)", strings.TrimSpace(string(b)))
	}
	base = t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sticky = mkdirMode(t, base, "sticky", 0o1777, 0)
	return base, sticky
}

// mkdirMode makes dir/name with mode (in chmod(2)'s bits: 0o1777 is
// sticky), owned by uid.
func mkdirMode(t *testing.T, dir, name string, mode uint32, uid int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

// plant makes the symbolic link link to target as nobody, with ln run by
// a process of that user, as another user of the machine would.
func plant(t *testing.T, target, link string) {
	t.Helper()
	cmd := exec.Command("ln", "-s", "--", target, link)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ln -s %s %s as nobody: %v: %s", target, link, err, out)
	}
	if st := lstat(t, link); st.Uid != nobody {
		t.Fatalf("%s is owned by %d", link, st.Uid)
	}
}

// TestPlantedLinksRefused: links another user planted in a sticky
// world-writable directory are not followed, wherever they are met in the
// path, whatever they point to; nothing is created or changed, and the
// message names the link, its owner and the fix.
func TestPlantedLinksRefused(t *testing.T) {
	base, sticky := linkTestDir(t)
	victim := filepath.Join(base, "victim")
	writeFile(t, victim, "precious", 0o644)
	fifo := filepath.Join(base, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	null := roottest.NullDevice(t, base)
	realdir := mkdirMode(t, base, "realdir", 0o755, 0)

	plant(t, victim, filepath.Join(sticky, "file.json.gz"))
	plant(t, filepath.Join(base, "created"), filepath.Join(sticky, "dangling.png"))
	plant(t, null, filepath.Join(sticky, "null"))
	plant(t, fifo, filepath.Join(sticky, "fifo"))
	plant(t, realdir, filepath.Join(sticky, "d"))
	// The caller's own link, in its own directory, to a planted one: the
	// planted link is refused wherever it is met.
	mine := filepath.Join(base, "mine")
	if err := os.Symlink(filepath.Join(sticky, "file.json.gz"), mine); err != nil {
		t.Fatal(err)
	}

	refused := func(link string) string {
		return link + " is a symbolic link owned by uid 65534 (nobody) in the sticky world-writable directory " + sticky +
			", which wanlab does not follow as root (as fs.protected_symlinks would not): remove it or give another path"
	}
	o := Options{Label: "--output"}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(sticky, "file.json.gz"), "--output " + refused(filepath.Join(sticky, "file.json.gz"))},
		{filepath.Join(sticky, "dangling.png"), "--output " + refused(filepath.Join(sticky, "dangling.png"))},
		{filepath.Join(sticky, "null"), "--output " + refused(filepath.Join(sticky, "null"))},
		{filepath.Join(sticky, "fifo"), "--output " + refused(filepath.Join(sticky, "fifo"))},
		{filepath.Join(sticky, "d", "x.json.gz"), "--output " + filepath.Join(sticky, "d", "x.json.gz") + ": " + refused(filepath.Join(sticky, "d"))},
		{mine, "--output " + mine + " (a link to " + filepath.Join(sticky, "file.json.gz") + ") is a symbolic link owned by uid 65534 (nobody)"},
	} {
		before := listing(t, base) + listing(t, sticky) + listing(t, realdir)
		// Create of the FIFO would wait for a reader, and the test for
		// ever, were the link followed.
		for what, err := range map[string]error{"Check": Check(tc.path, o), "Create": createErr(tc.path, o)} {
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%s(%s) = %v\nwant %q", what, tc.path, err, tc.want)
			}
		}
		if after := listing(t, base) + listing(t, sticky) + listing(t, realdir); after != before {
			t.Errorf("%s: refused, yet a directory changed:\n%s\nwas\n%s", tc.path, after, before)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("the victim now holds %q (%v)", b, err)
	}

	// A directory wanlab makes is refused the same way.
	err := MkdirAll(filepath.Join(sticky, "d", "sub"), 0o755)
	if want := filepath.Join(sticky, "d", "sub") + ": " + refused(filepath.Join(sticky, "d")); err == nil || err.Error() != want {
		t.Errorf("MkdirAll through a planted link: %v\nwant %q", err, want)
	}
	if _, err := os.Lstat(filepath.Join(realdir, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("MkdirAll made the directory through the link (%v)", err)
	}
}

// createErr is Create's error, aborting a File it should not have made.
// A FIFO it should not have opened is given up on after a second.
func createErr(path string, o Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f, err := Create(ctx, path, o)
	if f != nil {
		f.Abort()
		return errors.New("Create succeeded")
	}
	return err
}

// TestLinksStillFollowed: the links the rule trusts are followed as
// before: the caller's own in a sticky directory, another user's in a
// directory that is not sticky and world-writable, and another user's in a
// sticky directory of their own; and MkdirAll goes through them.
func TestLinksStillFollowed(t *testing.T) {
	base, sticky := linkTestDir(t)
	plain := mkdirMode(t, base, "plain", 0o755, nobody)
	theirs := mkdirMode(t, base, "theirs", 0o1777, nobody)
	realdir := mkdirMode(t, base, "realdir", 0o755, 0)

	own := filepath.Join(sticky, "own.json")
	if err := os.Symlink(filepath.Join(base, "own-target.json"), own); err != nil {
		t.Fatal(err)
	}
	plant(t, filepath.Join(base, "plain-target.json"), filepath.Join(plain, "l.json"))
	plant(t, filepath.Join(base, "theirs-target.json"), filepath.Join(theirs, "l.json"))
	plant(t, realdir, filepath.Join(theirs, "d"))
	for link, target := range map[string]string{
		own:                                  filepath.Join(base, "own-target.json"),
		filepath.Join(plain, "l.json"):       filepath.Join(base, "plain-target.json"),
		filepath.Join(theirs, "l.json"):      filepath.Join(base, "theirs-target.json"),
		filepath.Join(theirs, "d", "x.json"): filepath.Join(realdir, "x.json"),
		theirs + "/d/../y":                   filepath.Join(base, "y"), // ".." of the link's target, as the kernel steps
	} {
		if err := write(t, link, Options{}); err != nil {
			t.Errorf("%s: %v", link, err)
			continue
		}
		checkFile(t, target, 0o644)
	}
	if err := MkdirAll(filepath.Join(theirs, "d", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, filepath.Join(realdir, "a", "b")); st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("MkdirAll made mode %o", st.Mode)
	}
}

// TestPlantedDefaultNames: links planted at the names wanlab derives (the
// default results name, predictable from the clock, and the graph beside
// it) are passed over, not followed: the output goes to the next numbered
// name, and the links' targets stay as they were, the dangling one
// uncreated.
func TestPlantedDefaultNames(t *testing.T) {
	base, sticky := linkTestDir(t)
	victim := filepath.Join(base, "victim")
	writeFile(t, victim, "precious", 0o644)
	results := filepath.Join(sticky, "wanlab-ping-20260304-050607.json.gz")
	graph := filepath.Join(sticky, "wanlab-ping-20260304-050607.all_scaled.png")
	plant(t, victim, results)
	plant(t, filepath.Join(base, "created"), graph)

	for path, want := range map[string]string{
		results: filepath.Join(sticky, "wanlab-ping-20260304-050607-2.json.gz"),
		graph:   filepath.Join(sticky, "wanlab-ping-20260304-050607.all_scaled-2.png"),
	} {
		o := Options{Label: "the results file", NoClobber: true}
		if err := Check(path, o); err != nil {
			t.Errorf("Check(%s): %v", path, err)
		}
		f, err := Create(context.Background(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(content)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if f.Path() != want {
			t.Errorf("wrote %s, want %s", f.Path(), want)
		}
		checkFile(t, want, 0o644)
		if st := lstat(t, path); st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("the planted link %s is now mode %o", path, st.Mode)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("the victim now holds %q (%v)", b, err)
	}
	if _, err := os.Lstat(filepath.Join(base, "created")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created (%v)", err)
	}
}

// TestMayFollow is the kernel's rule, case by case.
func TestMayFollow(t *testing.T) {
	const me, other, third = 0, nobody, 1000
	for _, tc := range []struct {
		dirMode       uint32
		dirUID, owner uint32
		want          bool
	}{
		{0o1777, 0, me, true},         // the caller's own link
		{0o1777, 0, other, false},     // /tmp, another user's link
		{0o1777, other, other, true},  // the directory owner's link
		{0o1777, third, other, false}, // neither
		{0o0777, 0, other, true},      // not sticky
		{0o1775, 0, other, true},      // not world-writable
		{0o1773, 0, other, false},     // sticky, and writable by others (0o002)
	} {
		dir := unix.Stat_t{Mode: unix.S_IFDIR | tc.dirMode, Uid: tc.dirUID}
		link := unix.Stat_t{Mode: unix.S_IFLNK | 0o777, Uid: tc.owner}
		if got := mayFollow(&dir, &link, me); got != tc.want {
			t.Errorf("directory %o of uid %d, link of uid %d: mayFollow = %v, want %v", tc.dirMode, tc.dirUID, tc.owner, got, tc.want)
		}
	}
}
