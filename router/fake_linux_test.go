package router

import (
	"os"
	"syscall"
	"testing"
	"time"

	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tun"
)

// fakeVNet is an in-memory tun.VNetDevice: TryRead hands out copies of a
// fixed set of packets (each with its virtio-net header), perRead at a
// time, and WriteOne counts what it is given.
type fakeVNet struct {
	pkts    [][]byte // header + packet
	next    int
	perRead int
	budget  int // packets left to hand out; <0 without limit
	written int
	bytes   int
	segs    int
	zeroHdr int // writes with a header of zeros
	badCsum int // of those, IPv4 TCP packets whose checksum is wrong

	offloads uint     // what Offloads reports
	keep     bool     // keep what is written in got, super-packets split
	got      [][]byte // the packets a receiving kernel would see
}

func (f *fakeVNet) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	n := 0
	for n < len(bufs) && n < f.perRead && f.budget != 0 && len(f.pkts) > 0 {
		p := f.pkts[f.next]
		f.next = (f.next + 1) % len(f.pkts)
		copy(bufs[n][offset-tun.VNetHdrLen:], p)
		sizes[n] = len(p) - tun.VNetHdrLen
		n++
		if f.budget > 0 {
			f.budget--
		}
	}
	return n, nil
}

func (f *fakeVNet) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	return f.TryRead(bufs, sizes, offset)
}

func (f *fakeVNet) Wait(int, time.Duration) (bool, bool, error) { return true, false, nil }

func (f *fakeVNet) WriteOne(b []byte, offset int) syscall.Errno {
	f.written++
	f.bytes += len(b) - offset
	h, _ := packet.DecodeVirtioNetHdr(b[offset-tun.VNetHdrLen : offset])
	g, err := inspect(b[offset:], h)
	if err != nil {
		return syscall.EINVAL
	}
	f.segs += g.segs
	if f.keep {
		f.keepSegments(b[offset:], h, g.segs)
	}
	if h == (packet.VirtioNetHdr{}) {
		f.zeroHdr++
		if p := b[offset:]; g.proto == packet.ProtoTCP && p[0]>>4 == 4 && !refChecksumOK(p, 20) {
			f.badCsum++
		}
	}
	return 0
}

func (f *fakeVNet) Write(bufs [][]byte, offset int) (int, error) {
	for _, b := range bufs {
		f.WriteOne(b, offset)
	}
	return len(bufs), nil
}

// keepSegments appends to f.got the packets p stands for, their checksums
// complete, as the receiving kernel sees them.
func (f *fakeVNet) keepSegments(p []byte, h packet.VirtioNetHdr, segs int) {
	if h.GSOType == packet.GSONone {
		b := append([]byte(nil), p...)
		if err := packet.CompleteChecksum(b, h); err != nil {
			panic(err)
		}
		f.got = append(f.got, b)
		return
	}
	out, sizes := make([][]byte, segs), make([]int, segs)
	for i := range out {
		out[i] = make([]byte, len(p)) // room for any segment, however large its GSO size
	}
	n, err := packet.SplitGSO(p, h, out, sizes)
	if err != nil {
		panic(err)
	}
	for i := range n {
		f.got = append(f.got, out[i][:sizes[i]])
	}
}

func (f *fakeVNet) Offloads() uint { return f.offloads }
func (f *fakeVNet) BatchSize() int { return readBatch }
func (f *fakeVNet) Name() string   { return "fake" }
func (f *fakeVNet) Close() error   { return nil }

var _ tun.VNetDevice = (*fakeVNet)(nil)

// fakeRouter builds a router between two fake devices; client hands out
// pkts. The loops are stepped by the caller, not run.
func fakeRouter(t testing.TB, upChain []qdisc.Spec, pkts [][]byte) (*Router, *fakeVNet, *fakeVNet) {
	t.Helper()
	return fakeRouterWith(t, Config{Up: link.Config{Chain: upChain}}, pkts)
}

// fakeRouterFramed is fakeRouter with the given framing.
func fakeRouterFramed(t testing.TB, upChain []qdisc.Spec, pkts [][]byte, f qdisc.Framing) (*Router, *fakeVNet, *fakeVNet) {
	t.Helper()
	return fakeRouterWith(t, Config{Up: link.Config{Chain: upChain}, Framing: f}, pkts)
}

// fakeRouterWith is fakeRouter with the chain and the options cfg gives;
// it sets the up link's seed and the two devices.
func fakeRouterWith(t testing.TB, cfg Config, pkts [][]byte) (*Router, *fakeVNet, *fakeVNet) {
	t.Helper()
	c := &fakeVNet{pkts: pkts, perRead: readBatch, budget: -1}
	s := &fakeVNet{perRead: readBatch}
	cfg.Up.Env = qdisc.Env{Seed: 1}
	cfg.Client, cfg.Server = c, s
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.up.close(); r.down.close() })
	return r, c, s
}

// step runs one read and release pass of l, as its loop does.
func step(l *loop) int {
	n, _, _ := l.pass()
	return n
}

func superPkts(v6 bool, payload, mss int) [][]byte {
	h, p := tcpSuper(v6, payload, mss, 0x10)
	return [][]byte{append(h, p...)}
}

// TestFakeWholeAndSplit pushes super-packets through a direct path (they
// leave whole) and through a jittered netem (which cuts them, each segment
// with a delay of its own), and checks what the server side gets and what
// the counters say.
func TestFakeWholeAndSplit(t *testing.T) {
	const payload, mss = 60000, 1448
	segs := (payload + mss - 1) / mss
	for _, tc := range []struct {
		chain string
		whole bool // every super-packet leaves as it came
	}{{"", true}, {"netem limit 100000 delay 1us 1us", false}} {
		r, c, s := fakeRouter(t, mustChain(t, tc.chain), superPkts(false, payload, mss))
		c.budget = 100
		deadline := time.Now().Add(time.Second)
		for s.segs < 100*segs && time.Now().Before(deadline) {
			step(r.up)
		}
		snap := r.Snapshot().Up
		if !snap.GSO.Whole {
			t.Errorf("%q: super-packets do not enter the link whole", tc.chain)
		}
		if s.segs != 100*segs || s.badCsum != 0 {
			t.Fatalf("%q: server got %d segments (%d bad checksums), want %d", tc.chain, s.segs, s.badCsum, 100*segs)
		}
		if tc.whole && s.written != 100 || !tc.whole && s.written <= 100 {
			t.Errorf("%q: %d writes of %d super-packets", tc.chain, s.written, 100)
		}
		cn := snap.Counters
		// 52 bytes of IPv4 and TCP headers and 14 of Ethernet framing
		// per segment.
		wire := uint64(100 * (payload + segs*(52+14)))
		if cn.Sent != uint64(100*segs) || cn.Delivered != uint64(100*segs) || cn.BytesIn != wire || cn.BytesOut != wire {
			t.Errorf("%q: counters %+v, want %d segments and %d bytes each way", tc.chain, cn, 100*segs, wire)
		}
		if len(snap.Flows) != 1 || snap.Flows[0].Payload != 100*payload || snap.Flows[0].Packets != uint64(100*segs) {
			t.Errorf("%q: flows %+v", tc.chain, snap.Flows)
		}
		if snap.Qdiscs != nil && snap.Qdiscs[0].Counters.Packets != uint64(100*segs) {
			t.Errorf("%q: qdisc counters %+v, want %d segments", tc.chain, snap.Qdiscs[0].Counters, 100*segs)
		}
		l := r.up
		if live := l.small.Live() + l.large.Live() - readBatch; live != l.dir.Len() {
			t.Errorf("%q: %d packets live beside the read ring, %d in the link", tc.chain, live, l.dir.Len())
		}
	}
}

// BenchmarkLoop measures one packet through read, link and write over
// fake devices: MTU-sized packets and 64 KiB super-packets, which the
// disciplines decide on segment by segment and keep whole where the
// segments' fates agree (a direct path, a constant delay, rare loss, a
// shaper that does not limit and fq_codel), cut where every segment gets a
// delay of its own (jitter), or take whole (jitter, gso granularity).
func BenchmarkLoop(b *testing.B) {
	for _, bc := range []struct {
		name    string
		chain   string
		payload int
		gso     bool
	}{
		{"mtu/direct", "", 1448, false},
		{"mtu/delay", "netem delay 200us", 1448, false},
		{"gso/direct", "", 65000, false},
		{"gso/delay", "netem limit 100000 delay 200us", 65000, false},
		{"gso/loss", "netem limit 100000 delay 200us loss 0.01%", 65000, false},
		{"gso/tbf_fq_codel", "netem limit 100000 delay 200us; tbf rate 100gbit burst 4mb latency 50ms; fq_codel", 65000, false},
		{"gso/jitter", "netem limit 100000 delay 200us 1us", 65000, false},
		{"gso/jitter_whole", "netem limit 100000 delay 200us 1us", 65000, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pkts := superPkts(false, bc.payload, 1448)
			if bc.payload <= 1448 {
				h, p := tcpSuper(false, bc.payload, 1448, 0x10)
				h[1] = packet.GSONone
				pkts = [][]byte{append(h, p...)}
			}
			gran := qdisc.GranularitySegment
			if bc.gso {
				gran = qdisc.GranularityGSO
			}
			r, c, s := fakeRouterGranular(b, mustChain(b, bc.chain), pkts, gran)
			c.perRead = 8
			l := r.up
			// Warm up: fill the pools and the delay line.
			for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
				step(l)
			}
			segs0 := s.segs
			b.ReportAllocs()
			b.ResetTimer()
			read := 0
			for read < b.N {
				c.budget = min(8, b.N-read)
				// The work per packet, not the read pacer's waits
				// (the fake devices are not the kernel's).
				l.pacer.credit, l.pacer.next = maxCredit, 0
				read += step(l)
			}
			b.StopTimer()
			b.ReportMetric(float64(s.segs-segs0)/b.Elapsed().Seconds()/1e6, "Msegs/s")
		})
	}
}

// plainFake is a tun.Device without virtio-net headers: Write records the
// packets, Read blocks until Close.
type plainFake struct {
	closed  chan struct{}
	packets int
	bad     int
}

func (f *plainFake) Read([][]byte, []int, int) (int, error) {
	<-f.closed
	return 0, os.ErrClosed
}

func (f *plainFake) Write(bufs [][]byte, offset int) (int, error) {
	for _, b := range bufs {
		p := b[offset:]
		f.packets++
		if len(p) > 1500 || !packet.IPv4HeaderValid(p) || !refChecksumOK(p, 20) {
			f.bad++
		}
	}
	return len(bufs), nil
}

func (f *plainFake) BatchSize() int { return 16 }
func (f *plainFake) Name() string   { return "plain" }
func (f *plainFake) Close() error   { close(f.closed); return nil }

// TestFakeMixedKinds writes super-packets from a VNet device to a device
// without virtio-net headers: even on an empty chain they must be split,
// with complete checksums.
func TestFakeMixedKinds(t *testing.T) {
	const payload, mss = 20000, 1448
	segs := (payload + mss - 1) / mss
	c := &fakeVNet{pkts: superPkts(false, payload, mss), perRead: readBatch, budget: 10}
	s := &plainFake{closed: make(chan struct{})}
	r, err := New(Config{Client: c, Server: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); r.up.close(); r.down.close() })
	for range 10 {
		step(r.up)
	}
	snap := r.Snapshot().Up
	if snap.GSO.Whole || snap.GSO.Split != 10 {
		t.Errorf("whole %v, split %d; want false, 10", snap.GSO.Whole, snap.GSO.Split)
	}
	if s.packets != 10*segs || s.bad != 0 {
		t.Errorf("server got %d packets (%d bad), want %d good ones", s.packets, s.bad, 10*segs)
	}
}

// TestFakeOneSegmentSuperPacket sends super-packets with less than one
// segment of payload through a jittered chain: each leaves as the one
// segment it is, its header telling the receiving kernel so.
func TestFakeOneSegmentSuperPacket(t *testing.T) {
	r, c, s := fakeRouter(t, mustChain(t, "netem limit 10000 delay 1us 1us"), superPkts(false, 1000, 1448))
	c.budget = 20
	for end := time.Now().Add(time.Second); s.segs < 20 && time.Now().Before(end); {
		step(r.up)
	}
	snap := r.Snapshot().Up
	if snap.Malformed != 0 || s.segs != 20 || s.badCsum != 0 || snap.Counters.Delivered != 20 {
		t.Errorf("server got %d writes (%d segments, %d bad checksums), router malformed %d, delivered %d; want 20 segments, none bad or malformed",
			s.written, s.segs, s.badCsum, snap.Malformed, snap.Counters.Delivered)
	}
}

// TestLateLoopKeepsItsBurst steps a loop only every 4 ms, far later than
// the 0.9 ms a 1142-byte frame takes at 10 Mbit/s, through a tbf whose
// bucket holds 1.4 frames (1.28 ms): asked only when it woke, the bucket
// would have filled and overflowed while the loop slept and let one frame
// go per wake-up; asked first at the time it said it had a frame, then
// at the wake-up, it lets two go (the one due, then one on the 1.28 ms it
// credits since), whatever the lateness beyond.
func TestLateLoopKeepsItsBurst(t *testing.T) {
	r, c, s := fakeRouter(t, mustChain(t, "tbf rate 10mbit burst 1600 limit 30000"), [][]byte{udpDatagram(false, 1, 1001, 1100, 7)})
	c.perRead = 8
	steps := 0
	for start := time.Now(); time.Since(start) < 400*time.Millisecond; steps++ {
		step(r.up)
		time.Sleep(4 * time.Millisecond)
	}
	// The first wake-up finds the bucket full: one frame. The last may
	// not have come to its second ask.
	perWake := float64(s.segs+1) / float64(steps)
	if perWake < 1.9 || perWake > 2.1 {
		t.Errorf("%d frames in %d wake-ups 4 ms apart, %.2f per wake-up; want 2", s.segs, steps, perWake)
	}
	snap := r.Snapshot().Up
	if late := snap.Lateness; late.N == 0 || time.Duration(late.P50Ns) < 500*time.Microsecond {
		t.Errorf("lateness %+v: the packets left when the loop woke, late", late)
	}
}
