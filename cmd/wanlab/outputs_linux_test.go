package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
)

// TestUpPcapMissingDirectory: `up --pcap` into a directory that does not
// exist exits 2 before it creates anything.
func TestUpPcapMissingDirectory(t *testing.T) {
	name := uniqueName()
	path := filepath.Join(t.TempDir(), "missing", "x.pcap")
	args := []string{"up", "--name", name, "--pcap", path}
	var (
		stderr string
		code   int
	)
	if os.Geteuid() == 0 {
		// The real binary, with a timeout: were the path accepted, up
		// would build the testbed and run until stopped.
		_, stderr, code = cli(t, args...)
		t.Cleanup(func() { cli(t, "down", name) })
	} else {
		_, stderr, code = runWanlab(t, args...)
	}
	want := "wanlab: --pcap " + path + ": directory " + filepath.Dir(path) + " does not exist"
	if code != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("exit %d, %q; want %d and %q", code, stderr, exitUsage, want)
	}
	noTestbed(t, name)
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created", filepath.Dir(path))
	}
}

// TestUpPcapOutputs runs `wanlab up --pcap` in the foreground with each
// kind of path that it writes, pings across, stops it with Ctrl-C (which
// keeps the capture) and reads the capture.
func TestUpPcapOutputs(t *testing.T) {
	bin := wanlabBin(t)
	withUmask022(t)
	for _, pc := range pathCases("--pcap", "wan.pcap") {
		if pc.refused != "" {
			continue // TestUpPcapChecked and TestUpPcapMissingDirectory
		}
		t.Run(pc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, check := pc.setup(t, dir)
			name := uniqueName()
			up := exec.Command(bin, "up", "--name", name, "--pcap", path)
			// The ready message is on stdout, or on stderr when stdout
			// carries the capture.
			var capture strings.Builder
			var status io.ReadCloser
			var err error
			if path == "-" {
				up.Stdout = &capture
				status, err = up.StderrPipe()
			} else {
				status, err = up.StdoutPipe()
			}
			if err != nil {
				t.Fatal(err)
			}
			startUp(t, up, name, true)
			awaitUp(status, name)
			mustCLI(t, "exec", name, "--", "ping", "-c", "3", "-i", "0.1", "@peer")
			if err := up.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if err := up.Wait(); err != nil {
				t.Fatalf("up after Ctrl-C: %v", err)
			}
			wrote := func(t *testing.T, data []byte) { checkPcap(t, data, 6) }
			if path == "-" {
				wrote(t, []byte(capture.String()))
				return
			}
			check(t, wrote)
			noTemporaries(t, dir)
		})
	}
}

// checkPcap checks a capture of wanlab's format (nanosecond pcap,
// LINKTYPE_RAW) with at least icmp ICMP packets.
func checkPcap(t *testing.T, b []byte, icmp int) {
	t.Helper()
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b23c4d || binary.LittleEndian.Uint32(b[20:]) != 101 {
		t.Fatalf("capture of %d bytes without wanlab's pcap header: % x", len(b), b[:min(len(b), 24)])
	}
	n := 0
	for b = b[24:]; len(b) >= 16; {
		incl := int(binary.LittleEndian.Uint32(b[8:]))
		if len(b) < 16+incl {
			t.Fatalf("truncated record")
		}
		if p := b[16 : 16+incl]; len(p) >= 20 && p[0]>>4 == 4 && p[9] == syscall.IPPROTO_ICMP {
			n++
		}
		b = b[16+incl:]
	}
	if n < icmp {
		t.Errorf("the capture holds %d ICMP packets, want at least %d", n, icmp)
	}
}

// TestUpPcapFIFOWaitInterrupted: `up --pcap FIFO` says that it waits for
// the FIFO's reader, waits before it builds anything, and Ctrl-C ends the
// wait.
func TestUpPcapFIFOWaitInterrupted(t *testing.T) {
	bin := wanlabBin(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	name := uniqueName()
	up := exec.Command(bin, "up", "--name", name, "--pcap", fifo)
	var stderr strings.Builder
	up.Stderr = &stderr
	startUp(t, up, name, false)
	waitFor(t, "up to wait for the FIFO's reader", func() bool { return inFIFOOpen(up.Process.Pid) })
	noTestbed(t, name)
	if err := up.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := up.Wait()
	var ee *exec.ExitError
	want := "interrupted while waiting for a reader of the FIFO"
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(stderr.String(), want) {
		t.Errorf("up after Ctrl-C: %v, %q; want exit %d and %q", err, stderr.String(), exitFailure, want)
	}
	// The wait was announced, so that it did not look like a hang.
	if note := "--pcap " + fifo + " is a FIFO: writing starts once a reader opens it"; !strings.Contains(stderr.String(), note) {
		t.Errorf("up's stderr %q does not say %q", stderr.String(), note)
	}
	noTestbed(t, name)
	if st := statOf(t, fifo); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("the FIFO is now mode %o", st.Mode)
	}
}

// inFIFOOpen reports whether a thread of pid waits in the kernel for a
// FIFO's other end (wait_for_partner, called by fifo_open).
func inFIFOOpen(pid int) bool {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "wchan"))
	for _, p := range tasks {
		if b, _ := os.ReadFile(p); string(b) == "wait_for_partner" {
			return true
		}
	}
	return false
}

// TestRunOutputs gives `wanlab run`'s -o and --flent each kind of path
// (pathCases): a short ping over a plain veth pair, whose results or
// Flent file must reach a device, a FIFO or "-" as written, replace only
// a regular file, follow a symlink, and be refused, with nothing created,
// for a directory or a missing one.
func TestRunOutputs(t *testing.T) {
	bin := wanlabBin(t)
	withUmask022(t)
	isData := func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte("\x1f\x8b")) && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			t.Errorf("wrote %d bytes that are neither gzip nor JSON", len(data))
		}
	}
	for _, o := range []struct{ flag, label, suggest string }{
		{"-o", "--output", "results.json.gz"},
		{"--flent", "--flent", "results.flent.gz"},
	} {
		for _, pc := range pathCases(o.label, o.suggest) {
			t.Run(o.label+"/"+pc.name, func(t *testing.T) {
				run := func(path, dir string) (string, string, int) {
					args := []string{"run", "ping", "--direct", "--duration", "1s", "--lead", "0s", "--tail", "0s", o.flag, path}
					if o.flag != "-o" {
						args = append(args, "-o", filepath.Join(dir, "r.json.gz"))
					}
					run := exec.Command(bin, args...)
					run.Dir = dir
					var stdout, stderr bytes.Buffer
					run.Stdout, run.Stderr = &stdout, &stderr
					run.Run()
					return stdout.String(), stderr.String(), run.ProcessState.ExitCode()
				}
				fromStdout := func(t *testing.T, stdout string) { isData(t, []byte(stdout)) }
				checkPathCase(t, pc, run, fromStdout, isData)
			})
		}
	}
}

// plantAsNobody makes each link (link → target) as uid 65534, with ln run
// by a process of that user, as another user of the machine would.
func plantAsNobody(t *testing.T, links map[string]string) {
	t.Helper()
	roottest.NeedRealRoot(t, "plants links as another user (nobody), whom a user namespace does not map")
	for link, target := range links {
		cmd := exec.Command("ln", "-s", "--", target, link)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ln -s %s %s as nobody: %v: %s", target, link, err, out)
		}
	}
}

// stickyDir makes, in a directory any user may search, a sticky
// world-writable directory as /tmp is, and returns both.
func stickyDir(t *testing.T) (base, sticky string) {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/fs/protected_symlinks"); err == nil {
		t.Logf("fs.protected_symlinks = %s (wanlab applies its rule whatever the sysctl says)", strings.TrimSpace(string(b)))
	}
	base = t.TempDir()
	sticky = filepath.Join(base, "sticky")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	for d, mode := range map[string]uint32{filepath.Dir(base): 0o755, base: 0o755, sticky: 0o1777} {
		if err := unix.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	return base, sticky
}

// TestCLIPlantedLinks: as root, `run -o LINK` and `report -o LINK` where
// another user planted LINK in a sticky world-writable directory exit 2
// before anything is built or written, naming the link, its owner and the
// fix; links planted at the default names a run derives from the clock
// are passed over, the results and the graph going to -2 names beside
// them. The target of every link stays as it was.
func TestCLIPlantedLinks(t *testing.T) {
	bin := wanlabBin(t)
	withUmask022(t)
	base, sticky := stickyDir(t)
	victim := filepath.Join(base, "victim")
	writeMode(t, victim, "precious", 0o644)
	res := synthResults(t, base, "r.json.gz", "r", 1)
	link := filepath.Join(sticky, "x.json.gz")
	plantAsNobody(t, map[string]string{link: victim})
	short := []string{"--direct", "--duration", "0.2s", "--step", "0.1s", "--lead", "0s", "--tail", "0s"}

	before := dirListing(t, base)
	want := "wanlab: --output " + link + " is a symbolic link owned by uid 65534 (nobody) in the sticky world-writable directory " + sticky +
		", which wanlab does not follow as root (as fs.protected_symlinks would not): remove it or give another path\n"
	for _, args := range [][]string{
		append(append([]string{"run", "ping"}, short...), "-o", link),
		{"report", res, "-o", link},
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || stderr.String() != want {
			t.Errorf("wanlab %s: exit %d, %q\nwant %d, %q", args[0], code, stderr.String(), exitUsage, want)
		}
		noTestbed(t, runName(cmd.Process.Pid))
	}
	if after := dirListing(t, base); after != before {
		t.Errorf("refused, yet something changed:\n%s\nwas\n%s", after, before)
	}

	// The default results name, and its graph's once it is taken, for
	// every second the run may start in.
	links := map[string]string{}
	now := time.Now()
	for s := range 20 {
		stamp := "wanlab-ping-" + now.Add(time.Duration(s)*time.Second).Format("20060102-150405")
		links[filepath.Join(sticky, stamp+".json.gz")] = victim
		links[filepath.Join(sticky, stamp+"-2.all_scaled.png")] = filepath.Join(base, "created")
	}
	plantAsNobody(t, links)
	cmd := exec.Command(bin, append([]string{"run", "ping"}, short...)...)
	cmd.Dir = sticky
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	m := regexp.MustCompile(`(?m)^results: (wanlab-ping-\d{8}-\d{6})-2\.json\.gz\ngraph:   (wanlab-ping-\d{8}-\d{6})-2\.all_scaled-2\.png$`).FindStringSubmatch(stdout.String())
	if m == nil || m[1] != m[2] {
		t.Fatalf("the run did not write beside the planted links:\n%s", stdout.String())
	}
	regularFile(t, filepath.Join(sticky, m[1]+"-2.json.gz"), 0o644)
	regularFile(t, filepath.Join(sticky, m[1]+"-2.all_scaled-2.png"), 0o644)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("the victim now holds %.20q (%v)", b, err)
	}
	if _, err := os.Lstat(filepath.Join(base, "created")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created (%v)", err)
	}
}

// TestRunPrintsQuotedPaths: a results name with a newline is printed
// quoted on the lines that name what the run wrote, which stay one line
// each.
func TestRunPrintsQuotedPaths(t *testing.T) {
	bin := wanlabBin(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "ping", "--direct", "--duration", "0.2s", "--step", "0.1s", "--lead", "0s", "--tail", "0s", "-o", "a\nb.json.gz", "--flent", "c\x1b[2J.flent.gz")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	for _, line := range []string{
		`results: "a\nb.json.gz"`,
		`graph:   "a\nb.all_scaled.png"`,
		`flent:   "c\x1b[2J.flent.gz"  (flent -i "c\x1b[2J.flent.gz" -p ping -o plot.png)`,
	} {
		if !slices.Contains(strings.Split(stdout.String(), "\n"), line) {
			t.Errorf("no line %s in:\n%s", line, stdout.String())
		}
	}
	for _, f := range []string{"a\nb.json.gz", "a\nb.all_scaled.png", "c\x1b[2J.flent.gz"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestGraphFIFOWaitInterrupted: table's --plot, plot's -o and report's -o
// given a FIFO without a reader wait for one, as a shell's "> fifo" does,
// and SIGTERM or Ctrl-C ends that wait with a message instead of being
// ignored.
func TestGraphFIFOWaitInterrupted(t *testing.T) {
	bin := wanlabBin(t)
	summary, err := filepath.Abs("../../docs/experiments/data/e2.summary.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args func(fifo string) []string
		sig  syscall.Signal
	}{
		{"table --plot", func(f string) []string { return []string{"table", summary, "--plot", f} }, syscall.SIGTERM},
		{"plot -o", func(f string) []string { return []string{"plot", "--kind", "sweep", summary, "-o", f} }, syscall.SIGINT},
		{"report -o", func(f string) []string { return []string{"report", summary, "-o", f} }, syscall.SIGTERM},
	} {
		t.Run(c.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "out.svg")
			if c.name == "report -o" {
				fifo = filepath.Join(t.TempDir(), "out.html")
			}
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, c.args(fifo)...)
			var stderr strings.Builder
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			waitFor(t, "the FIFO's open", func() bool { return inFIFOOpen(cmd.Process.Pid) })
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("after %v: %v, %q; want exit %d saying it was interrupted", c.sig, err, stderr.String(), exitFailure)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("%v did not end the wait for the FIFO's reader", c.sig)
			}
			if st := statOf(t, fifo); st.Mode&unix.S_IFMT != unix.S_IFIFO {
				t.Errorf("the FIFO is now mode %o", st.Mode)
			}
		})
	}
}
