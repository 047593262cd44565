package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"wl-t1-c", true},
		{"wl-a_b", true},
		{"t1-c", false},    // no prefix
		{"wl-T1", false},   // upper case
		{"wl-a/b", false},  // path separator
		{"wl-../x", false}, // escapes /run/netns
		{"wl-" + strings.Repeat("a", 62), false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"wl-tun", true},
		{"eth0.100", true},
		{"wl-0123456789ab", true}, // 15 bytes
		{"wl-0123456789abc", false},
		{"", false},
		{"a b", false},
	} {
		if err := CheckIfName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckIfName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestCreateIsVisibleToIPNetns(t *testing.T) {
	needIPNetns(t)
	tb := newTestbed(t)
	h := mustNamespace(t, tb, "a")
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), h.Name()) {
		t.Fatalf("ip netns list does not show %s:\n%s", h.Name(), out)
	}
	links := ipNetnsExec(t, h.Name(), "ip", "-o", "link", "show")
	if n := strings.Count(links, "\n"); n != 1 || !strings.Contains(links, ": lo:") {
		t.Fatalf("a new namespace should hold only lo, ip link shows:\n%s", links)
	}
	if _, err := tb.Namespace("a"); err == nil {
		t.Fatal("a second namespace with the same role was created")
	}
	if _, err := Create(h.Name()); err == nil {
		t.Fatal("Create succeeded on an existing name")
	}
	names, err := List()
	if err != nil || !slices.Contains(names, h.Name()) {
		t.Fatalf("List() = %v, %v; want it to contain %s", names, err, h.Name())
	}
}

func TestDoRunsInsideAndComesBack(t *testing.T) {
	h := newNamespace(t)
	root := nsInode(t, "/proc/self/ns/net")
	inside := nsInode(t, h.Path())
	if root == inside {
		t.Fatal("the new namespace has the root namespace's inode")
	}
	var got uint64
	var threadDev, selfDev string
	err := Do(h, func() error {
		got = nsInode(t, threadNS)
		b, err := os.ReadFile("/proc/thread-self/net/dev")
		threadDev = string(b)
		if err != nil {
			return err
		}
		b, err = os.ReadFile("/proc/self/net/dev")
		selfDev = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != inside {
		t.Errorf("inside Do the thread is in namespace %d, want %d", got, inside)
	}
	if ifaces := devNames(threadDev); !slices.Equal(ifaces, []string{"lo"}) {
		t.Errorf("/proc/thread-self/net/dev inside Do lists %v, want [lo]", ifaces)
	}
	// /proc/self follows the main thread, which stays in the root
	// namespace: it shows the root namespace's interfaces.
	if rootIfaces := rootInterfaces(t); len(rootIfaces) > 1 && slices.Equal(devNames(selfDev), []string{"lo"}) {
		t.Errorf("/proc/self/net/dev inside Do shows only lo; expected the root namespace's %v", rootIfaces)
	}
	// Many goroutines later, no thread is left in the namespace.
	for range 50 {
		done := make(chan uint64)
		go func() {
			var st unix.Stat_t
			unix.Stat(threadNS, &st)
			done <- st.Ino
		}()
		if ino := <-done; ino != root {
			t.Fatalf("a goroutine after Do runs in namespace %d, want the root's %d", ino, root)
		}
	}
}

func devNames(procNetDev string) []string {
	var names []string
	for _, line := range strings.Split(procNetDev, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	slices.Sort(names)
	return names
}

func rootInterfaces(t *testing.T) []string {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	return names
}

func TestDoDiscardsThreadItCannotRestore(t *testing.T) {
	h := newNamespace(t)
	real := setNS
	t.Cleanup(func() { setNS = real })
	setNS = func(fd int) error {
		if fd == h.fd {
			return real(fd)
		}
		return errors.New("injected failure")
	}
	var tid int
	err := Do(h, func() error {
		tid = unix.Gettid()
		return nil
	})
	setNS = real
	if err == nil || !strings.Contains(err.Error(), "thread discarded") {
		t.Fatalf("Do = %v, want an error saying the thread was discarded", err)
	}
	// The goroutine ended while locked, so the runtime ends its thread.
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d, left inside %s, is still alive", tid, h.Name())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDoPassesPanicsAndErrors(t *testing.T) {
	h := newNamespace(t)
	want := errors.New("from f")
	if err := Do(h, func() error { return want }); !errors.Is(err, want) {
		t.Fatalf("Do returned %v, want %v", err, want)
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want boom", v)
			}
		}()
		Do(h, func() error { panic("boom") })
	}()
	if err := Do(h, func() error { return nil }); err != nil {
		t.Fatalf("Do after a panic: %v", err)
	}
	if err := Do(h, func() error { runtime.Goexit(); return nil }); err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("Do with a Goexit = %v, want an error naming it", err)
	}
	if err := Do(h, func() error { return nil }); err != nil {
		t.Fatalf("Do after a Goexit: %v", err)
	}
	closed := &Handle{name: "wl-closed", fd: -1}
	if err := Do(closed, func() error { return nil }); err == nil {
		t.Fatal("Do on a closed handle succeeded")
	}
}
