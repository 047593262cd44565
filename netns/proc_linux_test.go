package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// keepOpen opens a second handle on ns so that the namespace, and with it
// its ID, outlives the testbed: a check for processes left in it after
// Close is then sound (no new namespace can have taken the ID).
func keepOpen(t *testing.T, ns *Handle) ID {
	t.Helper()
	h, err := Open(ns.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	id, err := h.ID()
	if err != nil {
		t.Fatal(err)
	}
	if want, err := IDOf(ns.Name()); err != nil || want != id {
		t.Fatalf("IDOf(%s) = %v, %v; the handle says %v", ns.Name(), want, err, id)
	}
	return id
}

// waitProcs waits until ProcessesIn(id) finds n processes named cmd (of
// any name if cmd is empty).
func waitProcs(t *testing.T, id ID, cmd string, n int) []Proc {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := ProcessesIn(id)
		if err != nil {
			t.Fatal(err)
		}
		var got []Proc
		for _, p := range ps {
			if cmd == "" || p.Cmd == cmd {
				got = append(got, p)
			}
		}
		if len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("found %d processes named %s in the namespace, want %d: %+v", len(got), cmd, n, ps)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCloseEndsEveryProcessInItsNamespaces starts programs inside a
// testbed's namespace that the testbed never hears of: background children
// of a shell that has exited, a double fork into a new session, one that
// ignores SIGTERM, a stopped one and one started with `ip netns exec`.
// Close must end them all before it removes the namespace.
func TestCloseEndsEveryProcessInItsNamespaces(t *testing.T) {
	needIPNetns(t)
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	id := keepOpen(t, h)
	for _, script := range []string{
		"sleep 300 & sleep 301 &",
		"setsid sh -c 'sleep 302 & exec sleep 303' </dev/null >/dev/null 2>&1 &",
		"trap '' TERM; sleep 304 &",
		"sleep 305 & kill -STOP $!",
	} {
		// No output pipes: the background processes would hold them.
		if err := Command(h, "sh", "-c", script).Run(); err != nil {
			t.Fatalf("sh -c %q: %v", script, err)
		}
	}
	byHand := exec.Command("ip", "netns", "exec", h.Name(), "sleep", "306")
	if err := byHand.Start(); err != nil {
		t.Fatal(err)
	}
	defer byHand.Wait()
	// Seven sleeps; the stopped one may have been stopped before it
	// became sleep, as a forked sh.
	sleeps := waitProcs(t, id, "", 7)
	if st, _ := tb.State(); len(st.Children) != 0 {
		t.Fatalf("the testbed recorded %+v; this test is about processes it never started", st.Children)
	}

	start := time.Now()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, p := range sleeps {
		if p.Alive() {
			t.Errorf("pid %d (%s) survived Close", p.PID, p.Cmd)
		}
	}
	if left, err := ProcessesIn(id); err != nil || len(left) != 0 {
		t.Errorf("after Close the namespace still holds %+v (%v)", left, err)
	}
	if Exists(h.Name()) {
		t.Errorf("%s still mounted", h.Name())
	}
	// The one that ignores SIGTERM got SIGKILL after the grace period.
	if took < childGrace || took > childGrace+3*time.Second {
		t.Errorf("Close took %v, want a little over the %v grace period", took, childGrace)
	}
	t.Logf("Close ended %d processes in %v", len(sleeps), took)
}

// TestCloseEndsProcessesForkedWhileEnding: a shell that ignores SIGTERM
// and keeps forking; what it forks after the first search is found by the
// next one.
func TestCloseEndsProcessesForkedWhileEnding(t *testing.T) {
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	id := keepOpen(t, h)
	script := `trap '' TERM; while :; do sleep 300 & sleep 0.02; done`
	if err := Command(h, "sh", "-c", "sh -c \""+script+"\" &").Run(); err != nil {
		t.Fatal(err)
	}
	waitProcs(t, id, "sh", 1)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if left, err := ProcessesIn(id); err != nil || len(left) != 0 {
		t.Errorf("after Close the namespace still holds %d processes (%v): %+v", len(left), err, left)
	}
}

// TestCloseSparesAReusedPid records a child whose pid now belongs to
// another process (same pid, another start time): Close must not signal
// that process.
func TestCloseSparesAReusedPid(t *testing.T) {
	tb := newTestbed(t)
	mustNamespace(t, tb, "a")
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	p, err := ProcOf(other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale := Proc{PID: p.PID, Start: p.Start - 1, Cmd: "sleep"}
	if err := tb.update(func(st *State) error { st.Children = append(st.Children, stale); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if !p.Alive() {
		t.Errorf("Close ended pid %d, which a recorded child of another start time once had", p.PID)
	}
}

// TestHelperThreadInside is not a test: TestAThreadInsideIsNoMember runs
// the test binary with WANLAB_HELPER_NS set, and it parks one thread
// inside that namespace.
func TestHelperThreadInside(t *testing.T) {
	h, err := Open(helperArg(t, "WANLAB_HELPER_NS"))
	helperMust(err)
	Do(h, func() error {
		fmt.Println("ready")
		time.Sleep(time.Minute)
		return nil
	})
	os.Exit(2)
}

// TestAThreadInsideIsNoMember: a process whose thread-group leader is
// elsewhere is not a member of a namespace one of its threads visits (as
// this package's Do does), and neither is the calling process, from
// whatever thread it asks.
func TestAThreadInsideIsNoMember(t *testing.T) {
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	id := keepOpen(t, h)
	visitor := startHelper(t, "TestHelperThreadInside", "", "WANLAB_HELPER_NS="+h.Name())
	if !threadInside(t, visitor.Process.Pid, id) {
		t.Fatal("no thread of the visitor is inside the namespace; the test proves nothing")
	}
	var inside []Proc
	if err := Do(h, func() (err error) {
		inside, err = ProcessesIn(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(inside) != 0 {
		t.Errorf("ProcessesIn from a thread inside found %+v; want nobody (the visitor's leader and this process are outside)", inside)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := visitor.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("Close ended the visitor: %v", err)
	}
}

// threadInside reports whether a thread of pid is in the namespace id.
func threadInside(t *testing.T, pid int, id ID) bool {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		if got, err := idAt(p); err == nil && got == id {
			return true
		}
	}
	return false
}

func TestCleanStaleRemovesTemporaries(t *testing.T) {
	needRoot(t)
	tmp := tempPath(fmt.Sprintf("u%06x", os.Getpid()&0xffffff))
	if err := os.WriteFile(tmp, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(tmp) })
	if _, err := CleanStale(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("%s, the temporary of a writer killed mid-write, survived CleanStale (%v)", tmp, err)
	}
	// Remove of the name, which has no record, removes it too.
	name := fmt.Sprintf("t%06x", os.Getpid()&0xffffff)
	if err := os.WriteFile(tempPath(name), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Remove(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove(%s) = %v, want ErrNotExist", name, err)
	}
	if _, err := os.Stat(tempPath(name)); !os.IsNotExist(err) {
		t.Errorf("%s survived Remove (%v)", tempPath(name), err)
	}
	// So does Remove of a testbed whose owner died in an update.
	tb := newTestbed(t)
	if err := os.WriteFile(tempPath(tb.Name()), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Remove(tb.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tempPath(tb.Name())); !os.IsNotExist(err) {
		t.Errorf("%s survived Remove of its testbed (%v)", tempPath(tb.Name()), err)
	}
}

// TestProcessesInNamesCommands checks the command names and start times
// ProcessesIn reports against ps's view.
func TestProcessesInNamesCommands(t *testing.T) {
	needIPNetns(t)
	h := newNamespace(t)
	id, err := h.ID()
	if err != nil {
		t.Fatal(err)
	}
	c := Command(h, "sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	ps := waitProcs(t, id, "sleep", 1)
	if ps[0].PID != c.Process.Pid || !ps[0].Alive() {
		t.Errorf("ProcessesIn = %+v, want the sleep %d", ps, c.Process.Pid)
	}
	out, err := exec.Command("ip", "netns", "pids", h.Name()).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(out)), fmt.Sprint(c.Process.Pid)) {
		t.Errorf("ip netns pids %s = %q, want it to list %d too", h.Name(), out, c.Process.Pid)
	}
}
