package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
)

// Every option that writes a file is given each kind of path: a character
// device, a FIFO, a symbolic link, an existing file, a new file, a
// directory, a path in a missing directory and "-". The package outfile
// tests the rules themselves; these tests hold each command to them.

// pathCase is one kind of output path. setup makes it in dir and returns
// the path and a check of what the command left there, given what the
// command wrote (or nil when the case must be refused).
type pathCase struct {
	name    string
	refused string // the message's start when the command must refuse the path
	setup   func(t *testing.T, dir string) (path string, check func(t *testing.T, wrote func(t *testing.T, data []byte)))
}

// checkRefused checks that a command given a path of case pc in dir was
// refused as bad input with pc's message, and that dir is as it was
// (listed as before).
func checkRefused(t *testing.T, pc pathCase, dir, before string, code int, stderr string) {
	t.Helper()
	want := "wanlab: " + strings.ReplaceAll(pc.refused, "DIR", dir)
	if code != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("exit %d, %q; want %d and %q", code, stderr, exitUsage, want)
	}
	if after := dirListing(t, dir); after != before {
		t.Errorf("refused, yet the directory changed:\n%s\nwas\n%s", after, before)
	}
}

// pathCases returns the kinds of path; suggest is the file name the
// option's message offers for a directory.
func pathCases(label, suggest string) []pathCase {
	return []pathCase{
		{name: "character device", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			null := roottest.NullDevice(t, dir)
			before := statOf(t, null)
			return null, func(t *testing.T, _ func(*testing.T, []byte)) {
				if after := statOf(t, null); after.Mode != before.Mode || after.Rdev != before.Rdev || after.Ino != before.Ino {
					t.Errorf("%s is now mode %o, rdev %x, inode %d; was %o, %x, %d", null, after.Mode, after.Rdev, after.Ino, before.Mode, before.Rdev, before.Ino)
				}
			}
		}},
		{name: "fifo", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			path := filepath.Join(dir, "fifo")
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			got := make(chan []byte, 1)
			go func() {
				b, _ := os.ReadFile(path)
				got <- b
			}()
			return path, func(t *testing.T, wrote func(*testing.T, []byte)) {
				wrote(t, <-got)
				if st := statOf(t, path); st.Mode&unix.S_IFMT != unix.S_IFIFO {
					t.Errorf("the FIFO is now mode %o", st.Mode)
				}
			}
		}},
		{name: "symlink", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			target := filepath.Join(dir, "target")
			writeMode(t, target, "old", 0o600)
			link := filepath.Join(dir, "link")
			if err := os.Symlink("target", link); err != nil {
				t.Fatal(err)
			}
			return link, func(t *testing.T, wrote func(*testing.T, []byte)) {
				if st := statOf(t, link); st.Mode&unix.S_IFMT != unix.S_IFLNK {
					t.Errorf("the link is now mode %o", st.Mode)
				}
				wrote(t, regularFile(t, target, 0o600))
			}
		}},
		{name: "existing file 0640", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			path := filepath.Join(dir, "old")
			writeMode(t, path, "old", 0o640)
			return path, func(t *testing.T, wrote func(*testing.T, []byte)) { wrote(t, regularFile(t, path, 0o640)) }
		}},
		{name: "new file", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			path := filepath.Join(dir, "new")
			return path, func(t *testing.T, wrote func(*testing.T, []byte)) { wrote(t, regularFile(t, path, 0o644)) }
		}},
		{name: "directory", refused: label + " DIR is a directory: give a file name, e.g. DIR/" + suggest, setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			return dir, nil
		}},
		{name: "missing directory", refused: label + " DIR/missing/out: directory DIR/missing does not exist: create it first", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			return filepath.Join(dir, "missing", "out"), nil
		}},
		{name: "stdout", setup: func(t *testing.T, dir string) (string, func(*testing.T, func(*testing.T, []byte))) {
			return "-", nil // the caller checks its own stdout
		}},
	}
}

func statOf(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func writeMode(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// regularFile checks that path is a regular file of mode and returns its
// content.
func regularFile(t *testing.T, path string, mode uint32) []byte {
	t.Helper()
	if st := statOf(t, path); st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != mode {
		t.Errorf("%s is mode %o, want a regular file %o", path, st.Mode, mode)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noTemporaries checks that dir holds no hidden temporary file.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}

// withUmask022 runs the test under the usual umask, which the mode of a
// new file depends on.
func withUmask022(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
}

const eventsHeader = "flow,seq,dir,size,sent_ns,left_ns,verdict\n"

// checkEvents checks an events file of the 50-packet flow simEventsArgs
// runs.
func checkEvents(t *testing.T, data []byte) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if !strings.HasPrefix(string(data), eventsHeader) || len(lines) != 51 {
		t.Errorf("events: %d lines starting %q; want the header and 50 rows", len(lines), lines[0])
	}
}

var simEventsArgs = []string{"sim", "--up", "netem loss 20%", "--flow", "cbr rate=1mbit size=1000 count=50", "--duration", "1s"}

func TestSimEventsOutputs(t *testing.T) {
	withUmask022(t)
	for _, pc := range pathCases("--events", "events.csv") {
		t.Run(pc.name, func(t *testing.T) {
			run := func(path, _ string) (string, string, int) {
				return runWanlab(t, append(simEventsArgs, "--events", path)...)
			}
			fromStdout := func(t *testing.T, stdout string) {
				csv, report, ok := strings.Cut(stdout, "path  up:")
				if !ok {
					t.Fatalf("stdout has no report after the events:\n%s", stdout)
				}
				checkEvents(t, []byte(csv))
				if strings.Contains(report, "flow,") {
					t.Error("events after the report")
				}
			}
			checkPathCase(t, pc, run, fromStdout, checkEvents)
		})
	}
}

// checkPathCase runs a command that writes to a path that pc sets up in a
// directory of the test's own, through run, and checks what it did: it
// refused pc's path, leaving the directory as it was; or it wrote what
// fromStdout checks on its standard output for "-", and otherwise what
// wrote checks into the file, with no temporary left.
func checkPathCase(t *testing.T, pc pathCase, run func(path, dir string) (stdout, stderr string, code int), fromStdout func(t *testing.T, stdout string), wrote func(t *testing.T, data []byte)) {
	t.Helper()
	dir := t.TempDir()
	path, check := pc.setup(t, dir)
	before := dirListing(t, dir)
	stdout, stderr, code := run(path, dir)
	if pc.refused != "" {
		checkRefused(t, pc, dir, before, code, stderr)
		return
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if path == "-" {
		fromStdout(t, stdout)
		return
	}
	check(t, wrote)
	noTemporaries(t, dir)
}

// dirListing names what dir holds, recursively, with modes.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestUpPcapChecked: `up` checks --pcap while reading its options, before
// anything is created and without opening the path (a FIFO would block).
func TestUpPcapChecked(t *testing.T) {
	for _, pc := range pathCases("--pcap", "wan.pcap") {
		t.Run(pc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, _ := pc.setup(t, dir)
			if pc.name == "fifo" {
				// Check must not open the FIFO, which would wait for the
				// reader setup started; that reader waits for a writer
				// until this one.
				defer func() {
					if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
						w.Close()
					}
				}()
			}
			before := dirListing(t, dir)
			o := upOptions{name: "t", device: "vnet", pcap: path}
			lo, err := o.options()
			if after := dirListing(t, dir); after != before {
				t.Errorf("checking --pcap changed the directory:\n%s\nwas\n%s", after, before)
			}
			if pc.refused != "" {
				var ue *usageError
				want := strings.ReplaceAll(pc.refused, "DIR", dir)
				if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("options() = %v; want a usage error %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := filepath.Abs(path); path != "-" && lo.Pcap != want || path == "-" && lo.Pcap != "-" {
				t.Errorf("lab.Options.Pcap = %q for --pcap %s", lo.Pcap, path)
			}
		})
	}
	o := upOptions{name: "t", device: "vnet", pcap: "-", detach: true}
	if _, err := o.options(); err == nil || !strings.Contains(err.Error(), "a detached testbed does not have") {
		t.Errorf("--pcap - --detach: %v", err)
	}
}

// TestSweepToStdoutRefused: a sweep writes a directory of results files,
// which cannot go to stdout: -o - is refused before anything is run or
// created (it made a directory named "-").
func TestSweepToStdoutRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, stderr, code := runWanlab(t, "run", "ping", "--direct", "--duration", "1s", "--sweep", "seed=1,2", "-o", "-")
	want := "wanlab: -o - with --sweep: a sweep writes a directory of results files, one per run, which cannot go to stdout: give the directory with -o DIR, or leave -o out\n"
	if code != exitUsage || stderr != want {
		t.Errorf("exit %d, %q; want %d, %q", code, stderr, exitUsage, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("refused, yet %s was created", ents[0].Name())
	}
}

// TestPrintedPathsQuoted: the line that names the file plot or report
// wrote stays one line when the name holds a newline or an escape: such a
// name is printed quoted, a plain one as it is.
func TestPrintedPathsQuoted(t *testing.T) {
	dir := t.TempDir()
	res := synthResults(t, dir, "r.json.gz", "r", 1)
	for _, tc := range []struct{ cmd, name, line string }{
		{"plot", "a\nb.png", "all_scaled graph of 1 run: "},
		{"report", "c\x1b[2Jd.html", "report of 1 run: "},
		{"report", "plain näme.html", "report of 1 run: "},
	} {
		path := filepath.Join(dir, tc.name)
		stdout, stderr, code := runWanlab(t, tc.cmd, res, "-o", path)
		shown := path
		if tc.name != "plain näme.html" {
			shown = strconv.Quote(path)
		}
		if code != 0 || stdout != tc.line+shown+"\n" {
			t.Errorf("%s -o %q: exit %d, stdout %q, stderr %q; want %q", tc.cmd, path, code, stdout, stderr, tc.line+shown+"\n")
		}
	}
}

// fullWriter fails every write as a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A command whose output does not reach the standard output (a full disk
// or device behind the redirection) fails, saying so, whatever prints it.
func TestStdoutWriteErrorFails(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--both", "netem delay 10ms", "--duration", "1s"},
		{"sim", "--both", "netem delay 10ms", "--duration", "1s", "--json"},
		{"experiment", "run", "../../examples/e2.yaml", "--dry-run"},
	} {
		var errOut bytes.Buffer
		code := run(args, strings.NewReader(""), fullWriter{}, &errOut)
		if code != exitFailure || !strings.Contains(errOut.String(), "no space left on device") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming the error", args, code, errOut.String(), exitFailure)
		}
	}
}
