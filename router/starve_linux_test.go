package router

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/packet"
	"wanlab/tun"
)

// pin binds thread tid (0: the calling one) to cpu.
func pin(t *testing.T, tid, cpu int) {
	t.Helper()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		t.Fatalf("sched_setaffinity(%d, cpu %d): %v", tid, cpu, err)
	}
}

// TestStarvedLoopShowsItself floods an empty path with UDP while the up
// loop's thread shares its CPU with busy threads, so that it falls far
// behind. What waits for it must not be hidden: every datagram the client
// sent either entered the router or is counted as dropped at the ring in
// front of it, the ring's stall figure shows the loop's own delay on the
// packets waiting there (their release lateness cannot: they have no
// deadline before the loop reads them), and the ring estimate shows
// packets waiting.
func TestStarvedLoopShowsItself(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: one for the loop and the busy threads, one for the sender")
	}
	b := newBed(t, bedOptions{kind: tun.VNet})
	var tid int32
	for deadline := time.Now().Add(2 * time.Second); tid == 0; {
		if tid = b.r.up.tid.Load(); tid == 0 && time.Now().After(deadline) {
			t.Fatal("the up loop did not start")
		}
		time.Sleep(time.Millisecond)
	}
	const loopCPU, sendCPU = 1, 0
	pin(t, int(tid), loopCPU)
	// Nice 10 and two busy threads beside it leave the loop a few percent
	// of its CPU, in slices milliseconds apart.
	if err := unix.Setpriority(unix.PRIO_PROCESS, int(tid), 10); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var busy sync.WaitGroup
	for range 2 {
		busy.Add(1)
		go func() {
			defer busy.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pin(t, 0, loopCPU)
			for !stop.Load() {
			}
		}()
	}

	conn, dst := b.udpFlow(t)
	sent := 0
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		pin(t, 0, sendCPU)
		msg := make([]byte, 1400)
		for end := time.Now().Add(time.Second); time.Now().Before(end); sent++ {
			if _, err := conn.Write(msg); err != nil {
				t.Fatal(err)
			}
		}
	}()
	stop.Store(true)
	busy.Wait()

	// Unstarved, the loop drains the ring; then everything is accounted.
	var s Snapshot
	for deadline := time.Now().Add(3 * time.Second); ; {
		time.Sleep(20 * time.Millisecond)
		s = b.r.Snapshot()
		if s.Up.Counters.Queued == 0 && uint64(sent) <= s.Up.Counters.Sent+s.Up.Ring.Drops || time.Now().After(deadline) {
			break
		}
	}
	up := s.Up
	var flow FlowSnapshot
	for _, f := range up.Flows {
		if f.Flow.Proto == packet.ProtoUDP && f.Flow.Dst == dst {
			flow = f
		}
	}
	t.Logf("sent %d datagrams in 1 s; router took %d (delivered %d of the flow), ring of %d dropped %d (%s); stall %+v; lateness %+v; waiting %+v in %d reads (%d full)",
		sent, up.Counters.Sent, flow.Packets, up.Ring.Size, up.Ring.Drops, up.Ring.Err, up.Ring.Stall, up.Lateness, up.Ring.Waiting, up.Ring.Reads, up.Ring.FullReads)
	if up.Ring.Err != "" {
		t.Fatalf("ring counters: %s", up.Ring.Err)
	}
	if up.Ring.Drops == 0 {
		t.Errorf("no ring drops reported for a loop starved of CPU")
	}
	// Every datagram is accounted for: taken by the router or dropped at
	// the ring. A few other packets (IPv6 neighbour traffic) may add to
	// what the router took.
	if got := flow.Packets + flow.Dropped + up.Ring.Drops; got < uint64(sent) || up.Counters.Sent+up.Ring.Drops > uint64(sent)+20 {
		t.Errorf("sent %d; flow delivered %d + dropped %d + ring drops %d = %d; router took %d in all",
			sent, flow.Packets, flow.Dropped, up.Ring.Drops, got, up.Counters.Sent)
	}
	if up.Ring.Stall.MaxNs < int64(time.Millisecond) {
		t.Errorf("ring stalls %+v: a starved loop leaves packets waiting for milliseconds", up.Ring.Stall)
	}
	if up.Ring.Waiting.Max <= readBatch || up.Ring.FullReads == 0 {
		t.Errorf("ring estimate %+v after %d full reads: packets waited for the loop", up.Ring.Waiting, up.Ring.FullReads)
	}
}
