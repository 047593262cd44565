package router

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/roottest"
	"wanlab/internal/rundir"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tun"
)

// pingRTTs pings dst from h n times and returns the round-trip times in ms,
// sorted.
func (b *bed) pingRTTs(t *testing.T, h *host, dst netip.Addr, n int) []float64 {
	t.Helper()
	out, err := b.command(h, "ping", "-c", strconv.Itoa(n), "-i", "0.05", "-W", "2", dst.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("ping %s: %v\n%s", dst, err, out)
	}
	var rtts []float64
	for _, m := range regexp.MustCompile(`time=([0-9.]+) ms`).FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		rtts = append(rtts, v)
	}
	if len(rtts) != n {
		t.Fatalf("ping %s: %d replies, want %d:\n%s", dst, len(rtts), n, out)
	}
	slices.Sort(rtts)
	return rtts
}

// pingRTT returns the smallest and the median RTT of n pings.
func (b *bed) pingRTT(t *testing.T, h *host, dst netip.Addr, n int) (lo, med float64) {
	t.Helper()
	r := b.pingRTTs(t, h, dst, n)
	return r[0], r[len(r)/2]
}

func TestPingDelay(t *testing.T) {
	b := newBed(t, bedOptions{kind: tun.VNet, up: "netem delay 25ms", down: "netem delay 25ms", pcap: true})
	const n = 10
	rounds := 0 // Twice measures again after a first attempt the machine's noise spoilt
	roottest.Twice(t, "ping", func(r roottest.Reporter) {
		rounds++
		for _, dst := range []netip.Addr{b.s.v4, b.s.v6} {
			rtts := b.pingRTTs(t, b.c, dst, n)
			if raceEnabled {
				// Late, never early: the lower bound holds at any speed.
				if rtts[0] < 50 {
					r.Errorf("ping %s: %.3f ms, below the path's 50 ms", dst, rtts[0])
				}
				continue
			}
			roottest.JudgeRTT(r, "ping "+dst.String(), rtts, 50, 1, b.r.Snapshot().RoundTripLatenessP99())
		}
	})
	s := b.r.Snapshot()
	for _, d := range []DirSnapshot{s.Up, s.Down} {
		t.Logf("%s: chain %q, lateness %+v, delay mean %.0f ns", d.Name, d.Chain, d.Lateness, d.Counters.Delay.Mean)
		if d.Chain != "netem limit 1000 delay 25ms" {
			t.Errorf("%s: chain %q", d.Name, d.Chain)
		}
		if d.Counters.Delivered < 2*n || d.Lateness.N < 2*n {
			t.Errorf("%s: %d delivered, %d lateness samples; want >= %d", d.Name, d.Counters.Delivered, d.Lateness.N, 2*n)
		}
		if d.Counters.Delay.Min < 25e6 {
			t.Errorf("%s: a packet left after %.0f ns, before its 25 ms", d.Name, d.Counters.Delay.Min)
		}
		if len(d.Qdiscs) == 0 || d.Qdiscs[0].Kind != "netem" {
			t.Errorf("%s: qdiscs %+v", d.Name, d.Qdiscs)
		}
		if !d.GSO.Whole {
			t.Errorf("%s: constant netem delay should keep super-packets whole", d.Name)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	recs := readPcap(t, b.pcap.Bytes())
	echo := 0
	for _, r := range recs {
		if len(r) >= 28 && r[0]>>4 == 4 && r[9] == 1 {
			echo++
		}
	}
	if echo != 2*n*rounds {
		t.Errorf("pcap: %d ICMP packets, want %d (requests and replies); %d records in all", echo, 2*n*rounds, len(recs))
	}
}

// readPcap parses a nanosecond pcap of LINKTYPE_RAW and returns its
// packets; timestamps must not go backwards by more than a few ms (the two
// directions interleave).
func readPcap(t *testing.T, b []byte) [][]byte {
	t.Helper()
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != pcapMagicNano || binary.LittleEndian.Uint32(b[20:]) != 101 {
		t.Fatalf("pcap: bad global header % x", b[:min(len(b), 24)])
	}
	b = b[24:]
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 16 {
			t.Fatalf("pcap: truncated record header")
		}
		incl := int(binary.LittleEndian.Uint32(b[8:]))
		if len(b) < 16+incl {
			t.Fatalf("pcap: truncated record")
		}
		out = append(out, b[16:16+incl])
		b = b[16+incl:]
	}
	return out
}

// transfer sends data over TCP from the client to a listener on dst in the
// server's namespace and checks that it arrives intact.
func (b *bed) transfer(t *testing.T, dst netip.Addr, data []byte) time.Duration {
	t.Helper()
	return roottest.Transfer(t, b.c.ns, b.s.ns, dst, data)
}

func randomData(n int) []byte {
	data := make([]byte, n)
	rand.NewChaCha8([32]byte{'w', 'l'}).Read(data)
	return data
}

func TestTCPTransfer(t *testing.T) {
	size, size6 := 64<<20, 16<<20
	if raceEnabled {
		size, size6 = 8<<20, 2<<20
	}
	data := randomData(size)
	for _, tc := range []struct {
		name  string
		kind  tun.Kind
		chain string
		whole bool
	}{
		{"vnet-direct", tun.VNet, "", true},
		{"vnet-delay", tun.VNet, "netem limit 100000 delay 2ms", true},
		{"vnet-jitter", tun.VNet, "netem limit 100000 delay 2ms 100us fifo_jitter", true},
		{"offload-direct", tun.Offload, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t, bedOptions{kind: tc.kind, up: tc.chain, down: tc.chain})
			for _, dst := range []netip.Addr{b.s.v4, b.s.v6} {
				d := data
				if dst.Is6() {
					d = data[:size6]
				}
				el := b.transfer(t, dst, d)
				t.Logf("%s: %d MB in %v = %.2f Gbit/s", dst, len(d)>>20, el.Round(time.Millisecond), float64(len(d))*8/el.Seconds()/1e9)
			}
			s := b.r.Snapshot()
			up := s.Up
			if up.GSO.Whole != tc.whole {
				t.Errorf("whole = %v, want %v", up.GSO.Whole, tc.whole)
			}
			// Each transfer's flow carries exactly its data as payload
			// (retransmissions aside).
			var flows []FlowSnapshot
			for _, f := range up.Flows {
				if f.Flow.Proto == packet.ProtoTCP && f.Payload > 1<<20 {
					flows = append(flows, f)
				}
			}
			if len(flows) != 2 {
				t.Fatalf("%d bulk TCP flows up, want 2: %+v", len(flows), up.Flows)
			}
			for i, f := range flows {
				want := float64(len(data))
				if i == 1 {
					want = float64(size6)
				}
				// Under the race detector the loop may fall behind and
				// the ring drop, and TCP retransmits.
				if r := float64(f.Payload) / want; r < 1 || r > 1.01 && !raceEnabled {
					t.Errorf("flow %s: payload %d bytes, want %.0f (within 1%%)", f.Flow, f.Payload, want)
				}
				hdr := 52.0 + 14 // IPv4 + TCP with timestamps, Ethernet framing
				if i == 1 {
					hdr = 72 + 14
				}
				if got, want := float64(f.Bytes), float64(f.Payload)+hdr*float64(f.Packets); math.Abs(got-want) > want*0.001 {
					t.Errorf("flow %s: %d bytes for %d segments of payload %d: want about %.0f", f.Flow, f.Bytes, f.Packets, f.Payload, want)
				}
			}
			for _, d := range []DirSnapshot{s.Up, s.Down} {
				c := d.Counters
				t.Logf("%s: sent %d delivered %d bytes %d split %d lateness %+v reordered %d maxlen %d",
					d.Name, c.Sent, c.Delivered, c.BytesOut, d.GSO.Split, d.Lateness, c.Reordered, d.MaxInFlight)
				if c.Dropped != 0 || d.WriteDrops != 0 || d.Ring.Drops != 0 && !raceEnabled || d.Malformed != 0 {
					t.Errorf("%s: dropped %d, write drops %v, ring drops %d (%s), malformed %d; want none",
						d.Name, c.Dropped, d.WriteDropsByReason, d.Ring.Drops, d.Ring.Err, d.Malformed)
				}
				if c.Sent != c.Delivered+c.Dropped+c.Queued {
					t.Errorf("%s: sent %d != delivered %d + dropped %d + queued %d", d.Name, c.Sent, c.Delivered, c.Dropped, c.Queued)
				}
				if c.Reordered != 0 {
					t.Errorf("%s: %d reordered on a path that does not reorder", d.Name, c.Reordered)
				}
			}
		})
	}
}

// TestLoss sends 40000 UDP datagrams through netem loss 1% and checks the
// router's count of losses.
func TestLoss(t *testing.T) {
	b := newBed(t, bedOptions{kind: tun.VNet, up: "netem loss 1%", seed: 7})
	const n = 40000
	conn, dst := b.udpFlow(t)
	msg := make([]byte, 200)
	for i := range n {
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(200 * time.Microsecond) // stay well below what the router can carry
		}
	}
	var f FlowSnapshot
	var ringDrops uint64
	deadline := time.Now().Add(3 * time.Second)
	for {
		s := b.r.Snapshot()
		for _, g := range s.Up.Flows {
			if g.Flow.Proto == packet.ProtoUDP && g.Flow.Dst == dst {
				f = g
			}
		}
		ringDrops = s.Up.Ring.Drops
		if f.Packets+f.Dropped+ringDrops >= n || time.Now().After(deadline) {
			c := s.Up.Counters
			t.Logf("up: sent %d delivered %d dropped %d (loss %d), lateness %+v, ring drops %d, stalls %+v",
				c.Sent, c.Delivered, c.Dropped, c.DroppedByReason[qdisc.ReasonLoss], s.Up.Lateness, ringDrops, s.Up.Ring.Stall)
			if c.Dropped != c.DroppedByReason[qdisc.ReasonLoss] {
				t.Errorf("drops %d, of which loss %d: want all by loss", c.Dropped, c.DroppedByReason[qdisc.ReasonLoss])
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every datagram is counted: delivered, lost by netem, or dropped in
	// the ring in front of the router (on a machine busy enough to hold
	// the router up).
	if f.Packets+f.Dropped+ringDrops != n {
		t.Fatalf("flow counted %d delivered + %d dropped, ring %d, want %d in all", f.Packets, f.Dropped, ringDrops, n)
	}
	rate := float64(f.Dropped) / float64(f.Packets+f.Dropped)
	t.Logf("loss %.3f%% of %d the router took", rate*100, f.Packets+f.Dropped)
	if math.Abs(rate-0.01) > 0.002 {
		t.Errorf("loss %.3f%%, want 1%% ± 0.2%%", rate*100)
	}
}

// TestSetChain changes the delay while traffic may be in flight.
func TestSetChain(t *testing.T) {
	b := newBed(t, bedOptions{kind: tun.VNet})
	if lo, _ := b.pingRTT(t, b.c, b.s.v4, 3); lo > 5 {
		t.Errorf("direct path: rtt at least %.3f ms", lo)
	}
	rep, err := b.r.SetChain("up", mustChain(t, "netem delay 30ms"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || rep[0].Action != qdisc.Added || rep[0].NewKind != "netem" {
		t.Errorf("SetChain report %+v, want netem added at the root", rep)
	}
	lo, med := b.pingRTT(t, b.c, b.s.v4, 5)
	if lo < 30 || med > 31 && !raceEnabled {
		t.Errorf("after SetChain up netem delay 30ms: rtt min %.3f median %.3f ms", lo, med)
	}
	if err := b.r.CheckChain("down", mustChain(t, "pie; netem delay 1s")); err == nil {
		t.Error("CheckChain accepted a child under pie")
	}
	if _, err := b.r.SetChain("down", mustChain(t, "pie; netem delay 1s")); err == nil {
		t.Error("SetChain accepted a child under pie")
	}
	if _, err := b.r.SetChain("sideways", nil); err == nil {
		t.Error("SetChain accepted direction \"sideways\"")
	}
	if got := b.r.Snapshot().Up.Chain; got != "netem limit 1000 delay 30ms" {
		t.Errorf("up chain %q after SetChain", got)
	}
}

// TestRealTimePriority runs the loops under SCHED_FIFO.
func TestRealTimePriority(t *testing.T) {
	if _, err := New(Config{Client: &plainFake{}, Server: &plainFake{}, RealTimePriority: 100}); err == nil {
		t.Error("New accepted RealTimePriority 100")
	}
	var lim unix.Rlimit
	if rundir.Rootless() && (unix.Getrlimit(unix.RLIMIT_RTPRIO, &lim) != nil || lim.Cur < 5) {
		t.Skip("skipped: needs real root or RLIMIT_RTPRIO of 5 or more (ulimit -r): a user namespace gets no real-time priority beyond it")
	}
	b := newBed(t, bedOptions{kind: tun.VNet, up: "netem delay 10ms", rtPrio: 5})
	if lo, med := b.pingRTT(t, b.c, b.s.v4, 5); lo < 10 || med > 11 && !raceEnabled {
		t.Errorf("rtt min %.3f median %.3f ms, want 10 ms ± 1 ms", lo, med)
	}
	t.Logf("lateness up %+v", b.r.Snapshot().Up.Lateness)
}

// TestLoopScheduling checks that each loop's thread runs with the normal
// scheduling setNormal asks for, as the kernel reports it: nice -20 and a
// slice of loopSlice as real root (the slice on Linux 6.12 and later,
// which honours it); in a user namespace the nice value that RLIMIT_NICE
// allows, 0 without one.
func TestLoopScheduling(t *testing.T) {
	procsBefore := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { // after the bed's own cleanup, which stops the router
		if got := runtime.GOMAXPROCS(0); got != procsBefore {
			t.Errorf("GOMAXPROCS after the router stopped: %d, want %d as before", got, procsBefore)
		}
	})
	b := newBed(t, bedOptions{kind: tun.VNet, up: "netem delay 1ms"})
	b.pingRTT(t, b.c, b.s.v4, 2) // both loops have run
	if got := runtime.GOMAXPROCS(0); got != procsBefore+2 {
		t.Errorf("GOMAXPROCS while the router runs: %d, want %d (a P for each loop)", got, procsBefore+2)
	}
	wantNice := loopNice
	if rundir.Rootless() {
		wantNice = 0
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NICE, &lim) == nil && lim.Cur > 20 && lim.Cur < 40 {
			wantNice = 20 - int(lim.Cur)
		}
	}
	sn := b.r.Snapshot()
	for _, d := range []DirSnapshot{sn.Up, sn.Down} {
		lp := d.Loop
		if lp.Nice != wantNice || lp.SliceNs != int64(loopSlice) {
			t.Errorf("%s loop: nice %d, slice %d ns; want %d and %d", d.Name, lp.Nice, lp.SliceNs, wantNice, loopSlice)
		}
		attr, err := unix.SchedGetAttr(lp.TID, 0)
		if err != nil {
			t.Fatalf("%s loop: sched_getattr of thread %d: %v", d.Name, lp.TID, err)
		}
		if attr.Policy != unix.SCHED_NORMAL || int(attr.Nice) != wantNice {
			t.Errorf("%s loop: the kernel has policy %d nice %d, want SCHED_NORMAL and %d", d.Name, attr.Policy, attr.Nice, wantNice)
		}
		if kernelAtLeast(6, 12) && attr.Runtime != uint64(loopSlice) {
			t.Errorf("%s loop: the kernel has a slice of %d ns, want %d", d.Name, attr.Runtime, loopSlice)
		}
	}
}

// kernelAtLeast reports whether the running kernel's release is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
