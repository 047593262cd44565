package netns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadProc returns a process identity that no running process has: the pid
// of a child that has exited and been reaped.
func deadProc(t *testing.T) Proc {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	p := Proc{PID: c.Process.Pid, Start: 1}
	if p.Alive() {
		t.Fatalf("pid %d is alive", p.PID)
	}
	return p
}

func TestCleanStaleRemovesDeadOwnersTestbed(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("t%06x", rand.Uint32()&0xffffff)
	nsName := NamespaceName(name, "c")
	t.Cleanup(func() { Delete(nsName); os.Remove(statePath(name)) })
	h, err := Create(nsName)
	if err != nil {
		t.Fatal(err)
	}
	// A process the dead owner started inside, still running.
	child := Command(h, "sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	h.Close()
	cp, err := ProcOf(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Version: stateVersion, Name: name, Owner: deadProc(t), Created: time.Now(),
		Namespaces: []string{nsName}, Children: []Proc{cp}}
	if err := writeState(st); err != nil {
		t.Fatal(err)
	}
	// A live testbed next to it must survive.
	live := newTestbed(t)
	liveNS := mustNamespace(t, live, "s")

	gone, err := CleanStale()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gone, nsName) || slices.Contains(gone, liveNS.Name()) {
		t.Errorf("CleanStale removed %v, want %s and not %s", gone, nsName, liveNS.Name())
	}
	if Exists(nsName) {
		t.Errorf("%s still exists", nsName)
	}
	if _, err := os.Stat(statePath(name)); !os.IsNotExist(err) {
		t.Errorf("state file of %s still there (%v)", name, err)
	}
	err = child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("the stale testbed's child ended with %v, want SIGTERM", err)
	}
	if !Exists(liveNS.Name()) {
		t.Errorf("the live testbed's %s was removed", liveNS.Name())
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), nsName) {
		t.Errorf("ip netns list still shows %s", nsName)
	}
}

func TestCleanStaleLeavesUnclaimedNamespaces(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("wl-u%06x", rand.Uint32()&0xffffff)
	h, err := Create(name)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	t.Cleanup(func() { Delete(name) })
	if _, err := CleanStale(); err != nil {
		t.Fatal(err)
	}
	if !Exists(name) {
		t.Fatal("CleanStale removed a namespace no testbed claims")
	}
	un, err := Unclaimed()
	if err != nil || !slices.Contains(un, name) {
		t.Errorf("Unclaimed() = %v, %v; want it to list %s", un, err, name)
	}
}

func TestNewTestbedRefusesALiveName(t *testing.T) {
	tb := newTestbed(t)
	if _, err := NewTestbed(tb.Name()); err == nil || !strings.Contains(err.Error(), "wanlab down "+tb.Name()) {
		t.Fatalf("a second NewTestbed(%s) = %v, want a refusal naming wanlab down", tb.Name(), err)
	}
}

func TestNewTestbedTakesOverADeadOnesName(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("t%06x", rand.Uint32()&0xffffff)
	nsName := NamespaceName(name, "c")
	h, err := Create(nsName)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	t.Cleanup(func() { Delete(nsName); os.Remove(statePath(name)) })
	if err := writeState(State{Version: stateVersion, Name: name, Owner: deadProc(t), Namespaces: []string{nsName}}); err != nil {
		t.Fatal(err)
	}
	tb, err := NewTestbed(name)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if Exists(nsName) {
		t.Errorf("the dead testbed's %s survived NewTestbed", nsName)
	}
	if _, err := tb.Namespace("c"); err != nil {
		t.Fatal(err)
	}
}

func TestRemove(t *testing.T) {
	tb := newTestbed(t)
	a := mustNamespace(t, tb, "a")
	b := mustNamespace(t, tb, "b")
	if err := tb.AddDevice(a, "wl-tun"); err != nil {
		t.Fatal(err)
	}
	st, err := tb.State()
	if err != nil || !slices.Equal(st.Namespaces, []string{a.Name(), b.Name()}) || len(st.Devices) != 1 {
		t.Fatalf("state = %+v, %v", st, err)
	}
	if err := Remove(tb.Name()); err != nil {
		t.Fatal(err)
	}
	if Exists(a.Name()) || Exists(b.Name()) {
		t.Error("Remove left a namespace")
	}
	if err := Remove(tb.Name()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second Remove = %v, want ErrNotExist", err)
	}
	if _, err := tb.Namespace("c"); err == nil {
		t.Error("a removed testbed created a namespace")
	}
}

// TestHelperOwner is not a test: TestRemoveStopsALiveOwner runs the test
// binary as a separate owner process with WANLAB_HELPER_TESTBED set.
func TestHelperOwner(t *testing.T) {
	tb, err := NewTestbed(helperArg(t, "WANLAB_HELPER_TESTBED"))
	helperMust(err)
	_, err = tb.Namespace("c")
	helperMust(err)
	fmt.Println("ready")
	time.Sleep(time.Minute) // until SIGTERM ends it, without cleanup
	os.Exit(2)
}

func TestRemoveStopsALiveOwner(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("t%06x", rand.Uint32()&0xffffff)
	// Removed after the owner is killed: cleanups run last first.
	t.Cleanup(func() { Remove(name) })
	owner := startHelper(t, "TestHelperOwner", Prefix+name+"-owner", "WANLAB_HELPER_TESTBED="+name)
	nsName := NamespaceName(name, "c")
	if !Exists(nsName) {
		t.Fatalf("the owner's %s does not exist", nsName)
	}
	if gone, err := CleanStale(); err != nil || slices.Contains(gone, nsName) {
		t.Fatalf("CleanStale removed %v (%v) while the owner runs", gone, err)
	}
	if err := Remove(name); err != nil {
		t.Fatal(err)
	}
	err := owner.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("owner ended with %v, want SIGTERM", err)
	}
	if Exists(nsName) {
		t.Errorf("%s survived Remove", nsName)
	}
}
