package outfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode, os.Getenv(childPathEnv)))
	}
	// The mode a new file gets depends on the umask; the tests expect the
	// usual 022 unless they set another.
	syscall.Umask(0o022)
	os.Exit(m.Run())
}

// content is what the tests write: more than the 64 KiB buffer, so that
// part of it reaches the file before Commit.
var content = bytes.Repeat([]byte("0123456789abcdef"), 10000)

// temporaries lists the temporaries in dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmps []string
	for _, e := range ents {
		if strings.Contains(e.Name(), tempMarker) {
			tmps = append(tmps, e.Name())
		}
	}
	return tmps
}

// listing returns the names and modes in dir, to show that nothing changed.
func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %v %d\n", e.Name(), info.Mode(), info.Size())
	}
	return b.String()
}

func lstat(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func writeFile(t *testing.T, path string, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// write writes content through a File and commits it.
func write(t *testing.T, path string, o Options) error {
	t.Helper()
	f, err := Create(context.Background(), path, o)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(content); err != nil {
		return err
	}
	return f.Commit()
}

func TestWritesWhatThePathIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup prepares dir and returns the path to write and a check of
		// the result.
		setup func(t *testing.T, dir string) (string, func(t *testing.T))
	}{
		{"character device", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			null := roottest.NullDevice(t, dir)
			before := lstat(t, null)
			return null, func(t *testing.T) {
				after := lstat(t, null)
				if after.Mode != before.Mode || after.Rdev != before.Rdev || after.Uid != before.Uid || after.Ino != before.Ino {
					t.Errorf("%s changed: mode %o rdev %x ino %d, was %o %x %d", null, after.Mode, after.Rdev, after.Ino, before.Mode, before.Rdev, before.Ino)
				}
			}
		}},
		{"fifo", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			path := filepath.Join(dir, "fifo")
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			got := make(chan []byte, 1)
			go func() {
				b, _ := os.ReadFile(path) // opens, then reads to the writer's close
				got <- b
			}()
			return path, func(t *testing.T) {
				if b := <-got; !bytes.Equal(b, content) {
					t.Errorf("the reader got %d bytes, want the %d written", len(b), len(content))
				}
				if st := lstat(t, path); st.Mode&unix.S_IFMT != unix.S_IFIFO || st.Mode&0o777 != 0o600 {
					t.Errorf("the FIFO became mode %o", st.Mode)
				}
			}
		}},
		{"symlink to a file", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			target := filepath.Join(dir, "target.csv")
			writeFile(t, target, "old", 0o640)
			link := filepath.Join(dir, "link.csv")
			if err := os.Symlink("target.csv", link); err != nil {
				t.Fatal(err)
			}
			return link, func(t *testing.T) {
				if dest, err := os.Readlink(link); err != nil || dest != "target.csv" {
					t.Errorf("the link now reads %q, %v", dest, err)
				}
				checkFile(t, target, 0o640)
			}
		}},
		{"chain of symlinks, the last dangling", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "sub", "b")
			if err := os.Symlink("sub/b", a); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("new.csv", b); err != nil {
				t.Fatal(err)
			}
			return a, func(t *testing.T) {
				for _, l := range []string{a, b} {
					if st := lstat(t, l); st.Mode&unix.S_IFMT != unix.S_IFLNK {
						t.Errorf("%s is no longer a link", l)
					}
				}
				checkFile(t, filepath.Join(dir, "sub", "new.csv"), 0o644)
			}
		}},
		{"existing file 0640", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			path := filepath.Join(dir, "old.csv")
			writeFile(t, path, "old", 0o640)
			if os.Geteuid() == 0 {
				if err := os.Chown(path, 1234, 5678); err != nil {
					t.Fatal(err)
				}
			}
			return path, func(t *testing.T) {
				checkFile(t, path, 0o640)
				if st := lstat(t, path); os.Geteuid() == 0 && (st.Uid != 1234 || st.Gid != 5678) {
					t.Errorf("owner %d:%d, want the old file's 1234:5678", st.Uid, st.Gid)
				}
			}
		}},
		{"existing file 4755", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			path := filepath.Join(dir, "setuid")
			writeFile(t, path, "old", 0o755|os.ModeSetuid)
			return path, func(t *testing.T) {
				if st := lstat(t, path); st.Mode&0o7777 != 0o4755 {
					t.Errorf("mode %o, want the old file's 4755", st.Mode&0o7777)
				}
			}
		}},
		{"new file", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			path := filepath.Join(dir, "new.csv")
			return path, func(t *testing.T) { checkFile(t, path, 0o644) }
		}},
		{"relative path", func(t *testing.T, dir string) (string, func(t *testing.T)) {
			t.Chdir(dir)
			return "rel.csv", func(t *testing.T) { checkFile(t, filepath.Join(dir, "rel.csv"), 0o644) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, check := tc.setup(t, dir)
			if err := Check(path, Options{}); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if err := write(t, path, Options{}); err != nil {
				t.Fatal(err)
			}
			check(t)
			if tmps := temporaries(t, dir); len(tmps) > 0 {
				t.Errorf("temporaries left: %v", tmps)
			}
		})
	}
}

// checkFile checks that path is a regular file with mode and content.
func checkFile(t *testing.T, path string, mode uint32) {
	t.Helper()
	st := lstat(t, path)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != mode {
		t.Errorf("%s: mode %o, want a regular file %o", path, st.Mode, mode)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, content) {
		t.Errorf("%s: %d bytes (%v), want the %d written", path, len(b), err, len(content))
	}
}

func TestNewFileFollowsUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "private.csv")
	if err := write(t, path, Options{}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, 0o600)
}

func TestStdout(t *testing.T) {
	var out bytes.Buffer
	f, err := Create(context.Background(), "-", Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a,b\n")
	if out.Len() != 0 {
		t.Fatalf("%d bytes reached stdout before Commit; a small write should wait in the buffer", out.Len())
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a,b\n" {
		t.Errorf("stdout got %q", out.String())
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("Write after Commit succeeded")
	}
}

func TestUnbuffered(t *testing.T) {
	var out bytes.Buffer
	f, err := Create(context.Background(), "-", Options{Stdout: &out, Unbuffered: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	f.Write([]byte("x"))
	if out.String() != "x" {
		t.Errorf("an unbuffered write reached stdout as %q", out.String())
	}
}

// TestRefused gives Check and Create paths they must refuse, and checks the
// message and that nothing was created.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "file"), "old", 0o644)
	if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		o    Options
		want string
	}{
		{dir, Options{Label: "--events", Suggest: "events.csv"}, "--events " + dir + " is a directory: give a file name, e.g. " + dir + "/events.csv"},
		{dir + "/", Options{}, " is a directory: give a file name inside it"},
		{dir + "/dirlink", Options{Label: "--events"}, "--events " + dir + "/dirlink (a link to " + dir + "/sub) is a directory"},
		{dir + "/missing/x.pcap", Options{Label: "--pcap"}, "--pcap " + dir + "/missing/x.pcap: directory " + dir + "/missing does not exist: create it first (mkdir -p " + dir + "/missing)"},
		{dir + "/file/x.pcap", Options{}, "part of the path is a file, not a directory"},
		{dir + "/loop", Options{}, "too many levels of symbolic links"},
		{dir + "/sock", Options{}, "sock is a socket; wanlab writes to a regular file, a character device such as /dev/null, a FIFO or - (the standard output)"},
		{"", Options{Label: "--events"}, "--events: the file name is empty"},
		{dir + "/" + strings.Repeat("x", 256), Options{}, "a name in it is longer than 255 bytes"},
	}
	if os.Geteuid() == 0 {
		blk := filepath.Join(dir, "blk")
		if err := unix.Mknod(blk, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			path string
			o    Options
			want string
		}{blk, Options{}, "blk is a block device"})
	}
	before := listing(t, dir)
	for _, tc := range cases {
		errs := map[string]error{"Check": Check(tc.path, tc.o)}
		f, err := Create(context.Background(), tc.path, tc.o)
		if f != nil {
			f.Abort()
			t.Errorf("Create(%q) succeeded", tc.path)
		}
		errs["Create"] = err
		for what, err := range errs {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s(%q) = %v, want an error containing %q", what, tc.path, err, tc.want)
			}
		}
	}
	if after := listing(t, dir); after != before {
		t.Errorf("refused paths changed the directory:\n%s\nwas\n%s", after, before)
	}
}

// TestNoClobber: a name wanlab chose itself is never written over or
// through: a taken name, by a file, a link (dangling or not) or a FIFO,
// and a name taken between Create and Commit, make the output go to the
// next numbered name, which Path reports.
func TestNoClobber(t *testing.T) {
	dir := t.TempDir()
	o := Options{NoClobber: true, ClobberHint: "give another name with -o FILE"}
	base := filepath.Join(dir, "run.json.gz")
	commit := func(t *testing.T, f *File, want string) {
		t.Helper()
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if f.Path() != want {
			t.Errorf("Path() = %q, want %q", f.Path(), want)
		}
		checkFile(t, want, 0o644)
	}
	create := func(t *testing.T, path string) *File {
		t.Helper()
		f, err := Create(context.Background(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Abort)
		f.Write(content)
		return f
	}
	commit(t, create(t, base), base)

	// Taken by the file just written, by a dangling link and by a FIFO.
	if err := os.Symlink("elsewhere.json.gz", filepath.Join(dir, "run-2.json.gz")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "run-3.json.gz"), 0o600); err != nil {
		t.Fatal(err)
	}
	commit(t, create(t, base), filepath.Join(dir, "run-4.json.gz"))
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere.json.gz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created (%v)", err)
	}

	// Taken between Create and Commit.
	f := create(t, base)
	if f.Path() != filepath.Join(dir, "run-5.json.gz") {
		t.Errorf("Path() before Commit = %q, want the free run-5", f.Path())
	}
	writeFile(t, filepath.Join(dir, "run-5.json.gz"), "someone else's", 0o600)
	commit(t, f, filepath.Join(dir, "run-6.json.gz"))
	if b, _ := os.ReadFile(filepath.Join(dir, "run-5.json.gz")); string(b) != "someone else's" {
		t.Errorf("the file that appeared meanwhile now holds %q", b)
	}

	// A relative name stays relative.
	t.Chdir(dir)
	commit(t, create(t, "run.json.gz"), "run-7.json.gz")

	// Every name taken.
	for n := 8; n <= maxNames; n++ {
		writeFile(t, filepath.Join(dir, numbered("run.json.gz", n)), "x", 0o644)
	}
	before := listing(t, dir)
	for what, err := range map[string]error{"Check": Check(base, o), "Create": func() error { _, err := Create(context.Background(), base, o); return err }()} {
		want := base + ": it and the names after it up to run-100.json.gz are all taken, and wanlab does not replace a file it named itself: give another name with -o FILE"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with every name taken: %v; want %q", what, err, want)
		}
	}
	if after := listing(t, dir); after != before {
		t.Errorf("a refused name changed the directory:\n%s\nwas\n%s", after, before)
	}
	if tmps := temporaries(t, dir); len(tmps) > 0 {
		t.Errorf("temporaries left: %v", tmps)
	}
}

func TestNumbered(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want string
	}{
		{"wanlab-ping-20260304-050607.json.gz", 1, "wanlab-ping-20260304-050607.json.gz"},
		{"wanlab-ping-20260304-050607.json.gz", 2, "wanlab-ping-20260304-050607-2.json.gz"},
		{"run.all_scaled.png", 3, "run.all_scaled-3.png"},
		{"report.html", 10, "report-10.html"},
		{"run.flent.gz", 2, "run-2.flent.gz"},
		{"noext", 2, "noext-2"},
		{".hidden", 2, ".hidden-2"},
		{"x.gz", 2, "x-2.gz"},
	} {
		if got := numbered(tc.name, tc.n); got != tc.want {
			t.Errorf("numbered(%q, %d) = %q, want %q", tc.name, tc.n, got, tc.want)
		}
	}
}

// TestAbortKeepsTheOldFile aborts a replacement: the old file is intact
// and the temporary gone.
func TestAbortKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.csv")
	writeFile(t, path, "old", 0o640)
	f, err := Create(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Write(content)
	if len(temporaries(t, dir)) != 1 {
		t.Fatalf("no temporary while writing: %v", temporaries(t, dir))
	}
	f.Abort()
	f.Abort()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after Abort the file holds %d bytes, want the old 3", len(b))
	}
	if tmps := temporaries(t, dir); len(tmps) > 0 {
		t.Errorf("temporaries left: %v", tmps)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if len(registry.live) != 0 {
		t.Errorf("%d temporaries still registered", len(registry.live))
	}
}

// TestReaderGoesAway: a FIFO whose reader leaves makes Commit fail with a
// message saying so, instead of killing the process with SIGPIPE.
func TestReaderGoesAway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	opened := make(chan *os.File, 1)
	go func() {
		r, err := os.Open(path)
		if err != nil {
			opened <- nil
			return
		}
		opened <- r
	}()
	f, err := Create(context.Background(), path, Options{Label: "--events"})
	if err != nil {
		t.Fatal(err)
	}
	r := <-opened
	if r == nil {
		t.Fatal("the reader could not open the FIFO")
	}
	r.Close()
	for range 100 {
		if _, err := f.Write(content); err != nil {
			break
		}
	}
	err = f.Commit()
	if err == nil || !strings.Contains(err.Error(), "the reader of the FIFO closed it before the end") {
		t.Errorf("Commit after the reader left: %v", err)
	}
}

// TestFIFOWaitCanBeCancelled: opening a FIFO nobody reads waits, and ends
// when the context does.
func TestFIFOWaitCanBeCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		f, err := Create(ctx, path, Options{Label: "--pcap"})
		if f != nil {
			f.Abort()
		}
		errc <- err
	}()
	cancel()
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "--pcap "+path+": cannot open it (interrupted while waiting for a reader of the FIFO)") {
		t.Errorf("Create of a FIFO without a reader, cancelled: %v", err)
	}
	if st := lstat(t, path); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("the FIFO became mode %o", st.Mode)
	}
}

func TestTempNames(t *testing.T) {
	me := self()
	for _, base := range []string{"ev.csv", "a.wanlab-tmp.1.2.00000000", strings.Repeat("y", 255)} {
		name := tempName(base)
		if len(name) > 255 || !strings.HasPrefix(name, ".") {
			t.Errorf("tempName(%q) = %q", base, name)
		}
		ns, pid, ok := parseTempName(name)
		if !ok || ns != me.ns || pid != me.pid {
			t.Errorf("parseTempName(%q) = %d, %d, %v; want %d, %d", name, ns, pid, ok, me.ns, me.pid)
		}
	}
	for _, name := range []string{"ev.csv", ".ev.csv.tmp-123", ".x.wanlab-tmp.1.2", ".x.wanlab-tmp.1.2.zz", ".x.wanlab-tmp.a.2.00000000", "x.wanlab-tmp.1.2.00000000"} {
		if _, _, ok := parseTempName(name); ok {
			t.Errorf("parseTempName(%q) accepted it", name)
		}
	}
}

// TestStaleTemporaries: Create removes the temporaries of processes that
// are gone, and keeps those of live processes and other pid namespaces.
func TestStaleTemporaries(t *testing.T) {
	if self().ns == 0 {
		t.Skip("no /proc/self/ns/pid")
	}
	dir := t.TempDir()
	// A process that has exited and been waited for: its pid is free.
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	name := func(ns uint64, pid int) string {
		return fmt.Sprintf(".x.csv%s%d.%d.0badcafe", tempMarker, ns, pid)
	}
	dead := name(self().ns, p.Pid)
	live := name(self().ns, 1)
	other := name(self().ns+1, p.Pid)
	for _, n := range []string{dead, live, other} {
		writeFile(t, filepath.Join(dir, n), "stale", 0o600)
	}
	if err := write(t, filepath.Join(dir, "out.csv"), Options{}); err != nil {
		t.Fatal(err)
	}
	got := temporaries(t, dir)
	want := []string{live, other}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("temporaries after Create: %v; want only %v (the dead process's removed)", got, want)
	}
}

var _ io.StringWriter = (*File)(nil)

// TestPrintable: paths with a control character or invalid UTF-8 are
// quoted, in Printable and so in every message; plain ones are not.
func TestPrintable(t *testing.T) {
	for path, want := range map[string]string{
		"/tmp/run.json.gz": "/tmp/run.json.gz",
		"with space/näme":  "with space/näme",
		"a\nb.json.gz":     `"a\nb.json.gz"`,
		"esc\x1b[2J":       `"esc\x1b[2J"`,
		"bad\xffutf8":      `"bad\xffutf8"`,
		"rtl\u202eexe.png": `"rtl\u202eexe.png"`,
		`"quoted".json`:    `"\"quoted\".json"`,
		"tab\tin.csv":      `"tab\tin.csv"`,
	} {
		if got := Printable(path); got != want {
			t.Errorf("Printable(%q) = %s, want %s", path, got, want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "new\nline", "x.csv")
	err := Check(path, Options{Label: "--events"})
	q := strconv.Quote(filepath.Dir(path))
	if want := "--events " + strconv.Quote(path) + ": directory " + q + " does not exist: create it first (mkdir -p " + q + ")"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Check(%q) = %v\nwant %q", path, err, want)
	}
}
