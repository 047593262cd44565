package tun

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestVNetOpens(t *testing.T) {
	h := newNamespace(t)
	d, err := Open(h, tunName, Options{Kind: VNet, MTU: 1400})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v, ok := d.(VNetDevice)
	if !ok {
		t.Fatalf("a VNet device is a %T, not a VNetDevice", d)
	}
	if off := v.Offloads(); off&(tunFCSUM|tunFTSO4|tunFTSO6) != tunFCSUM|tunFTSO4|tunFTSO6 {
		t.Errorf("offloads %#x lack checksum or TSO", off)
	}
	link, err := netns.Command(h, "ip", "-d", "link", "show", tunName).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(link), "mtu 1400") || !strings.Contains(string(link), "vnet_hdr on") {
		t.Errorf("ip -d link: %s\nwant mtu 1400 and vnet_hdr on", link)
	}
	bufs, sizes := [][]byte{make([]byte, 100)}, []int{0}
	if n, err := v.TryRead(bufs, sizes, VNetHdrLen); n != 0 || err != nil {
		t.Errorf("TryRead on a device that is down = %d, %v; want 0, nil", n, err)
	}
	// A signal may end a timed Wait early, with the same result as the
	// timeout: wait in a loop, as callers do.
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		if r, w, err := v.Wait(-1, time.Until(end)); r || w || err != nil {
			t.Fatalf("Wait with nothing to read = %v, %v, %v", r, w, err)
		}
	}
	// A Wait blocked in ppoll: a signal ends it early with nothing set,
	// and Close ends it with an error. Each step waits until the waiting
	// thread is inside ppoll, instead of sleeping and hoping it is.
	tid, results := waitLoop(v)
	blockedInPpoll(t, tid)
	if err := unix.Tgkill(unix.Getpid(), tid, unix.SIGURG); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-results:
		if r.readable || r.woken || r.err != nil {
			t.Errorf("Wait interrupted by a signal = %v, %v, %v; want false, false, nil", r.readable, r.woken, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a signal did not end a Wait")
	}
	blockedInPpoll(t, tid)
	d.Close()
	// The loop ends at the first error: every Wait after Close returns
	// one, whichever wins the race between the signal-prone ppoll and
	// Close.
	for {
		select {
		case r := <-results:
			if r.err == nil {
				continue // a signal that came before Close
			}
			if !errors.Is(r.err, os.ErrClosed) {
				t.Errorf("Wait after Close: %v, want an error wrapping os.ErrClosed", r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end a Wait")
		}
		break
	}
	for range 3 {
		if _, _, err := v.Wait(-1, -1); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Wait on a closed device = %v, want an error wrapping os.ErrClosed", err)
		}
	}
}

// waitResult is what one Wait returned.
type waitResult struct {
	readable, woken bool
	err             error
}

// waitLoop calls v.Wait(-1, -1) again and again on a thread of its own,
// sending each result, until one is an error. It returns the thread's id.
func waitLoop(v VNetDevice) (int, <-chan waitResult) {
	results := make(chan waitResult, 16)
	tids := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		for {
			r, w, err := v.Wait(-1, -1)
			results <- waitResult{r, w, err}
			if err != nil {
				return
			}
		}
	}()
	return <-tids, results
}

// blockedInPpoll waits until thread tid of this process sleeps in ppoll, as
// /proc/self/task/TID/syscall shows it.
func blockedInPpoll(t *testing.T, tid int) {
	t.Helper()
	path := fmt.Sprintf("/proc/self/task/%d/syscall", tid)
	want := strconv.Itoa(unix.SYS_PPOLL) + " "
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d not in ppoll after 10 s: %s", tid, b)
		}
		runtime.Gosched()
	}
}

// TestVNetForwarding copies packets between two VNet devices with their
// virtio-net headers as they are: super-packets and partial checksums
// cross, and the kernels accept them.
func TestVNetForwarding(t *testing.T) {
	tb, c, s := newPair(t, VNet)
	up, _ := startForwarding(t, c, s)
	for _, dst := range []netip.Addr{s.v4, s.v6} {
		cmd := tb.Command(c.ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", dst.String())
		cmd.Args[0] = netns.Prefix + tb.Name() + "-ping"
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "2 received") {
			t.Fatalf("ping %s: %v\n%s", dst, err, out)
		}
	}
	size := 32 << 20
	if raceEnabled {
		size = 8 << 20
	}
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{'v'}).Read(data)
	before := up.packets.Load()
	el := roottest.Transfer(t, c.ns, s.ns, s.v4, data)
	n := up.packets.Load() - before
	t.Logf("%d MB in %v (%.1f Gbit/s), %d packets up: %.0f bytes each", size>>20, el.Round(time.Millisecond),
		float64(len(data))*8/el.Seconds()/1e9, n, float64(len(data))/float64(n))
	// Super-packets: far fewer reads than MTU-sized segments would need.
	if n == 0 || len(data)/int(n) < 4000 {
		t.Errorf("%d packets for %d bytes: the kernel sent no super-packets", n, len(data))
	}
}
