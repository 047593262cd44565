package qdisc

import (
	"math"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// cakeTest is a cake with a recorder and a pool, on a TUN device unless
// the test says otherwise.
type cakeTest struct {
	t    testing.TB
	q    *Cake
	rec  *recorder
	pool *packet.Pool
	seq  int64
}

func newCakeTest(t testing.TB, cfg CakeConfig, f Framing) *cakeTest {
	rec := &recorder{}
	pool := packet.NewPool(4096, packet.DefaultHeadroom)
	q, err := NewCake(cfg, &Env{Observer: rec, Pool: pool, MTU: 1500, Seed: 1, Framing: f})
	if err != nil {
		t.Fatal(err)
	}
	return &cakeTest{t: t, q: q, rec: rec, pool: pool}
}

// udp returns an IPv4/UDP packet of n bytes from 10.0.0.src:port to
// 10.1.0.dst:5001 with the given TOS byte.
func (c *cakeTest) udp(n int, src, dst byte, port uint16, tos uint8) *packet.Packet {
	p := c.pool.Get()
	p.SetLen(n)
	packet.WriteUDP4(p.Bytes(), packet.UDP4{
		Src: [4]byte{10, 0, 0, src}, Dst: [4]byte{10, 1, 0, dst},
		SrcPort: port, DstPort: 5001, TOS: tos,
	}, n)
	p.Seq = c.seq
	c.seq++
	return p
}

// cake_set_rate's arithmetic at 10 Mbit/s (1 250 000 bytes a second) on
// a TUN device (psched_mtu 1500): 2^34 s / 1 250 000 = 800 * 2^24 ns,
// which is below 2^34 after 10 shifts, so 800 ns a byte as (800 << 24) >>
// 24; the flow quantum is 1 250 000 >> 12 = 305; the MTU takes 1.2 ms,
// 1.5 times which is below the 5 ms target, so target 5 ms and interval
// 100 ms. diffserv4's bulk tin gets rate >> 4 = 78 125 bytes/s: 12 800 ns
// a byte (12800 << 20 >> 20), the MTU 19.2 ms, target 28.8 ms, interval
// 100 + 28.8 - 5 = 123.8 ms, quantum max(19, 300). The memory limit is
// 1 250 000 * 100 000 µs / 250 000 = 500 000 bytes, raised to 4 MiB.
func TestCakeSetRate(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Bandwidth: 1250000, Diffserv: CakeDiffserv4}, FramingIP)
	b := &c.q.tins[0]
	if b.rateNs != 800<<24 || b.rateShft != 24 || b.flowQuantum != 305 {
		t.Errorf("tin 0: rate_ns %d shift %d quantum %d, want %d 24 305", b.rateNs, b.rateShft, b.flowQuantum, uint64(800)<<24)
	}
	if b.cp.target != 5e6 || b.cp.interval != 100e6 || b.cp.mtuTime != 1.2e6 {
		t.Errorf("tin 0: target %d interval %d mtu_time %d", b.cp.target, b.cp.interval, b.cp.mtuTime)
	}
	bulk := &c.q.tins[1]
	if bulk.rateBps != 78125 || bulk.rateNs != 12800<<20 || bulk.rateShft != 20 || bulk.flowQuantum != 300 {
		t.Errorf("bulk tin: rate %d rate_ns %d shift %d quantum %d", bulk.rateBps, bulk.rateNs, bulk.rateShft, bulk.flowQuantum)
	}
	if bulk.cp.target != 28.8e6 || bulk.cp.interval != 123.8e6 {
		t.Errorf("bulk tin: target %d interval %d, want 28.8 ms and 123.8 ms", bulk.cp.target, bulk.cp.interval)
	}
	if q := [4]uint16{c.q.tins[0].tinQuantum, c.q.tins[1].tinQuantum, c.q.tins[2].tinQuantum, c.q.tins[3].tinQuantum}; q != [4]uint16{1024, 64, 512, 256} {
		t.Errorf("tin quanta %v, want 1024 64 512 256", q)
	}
	if c.q.bufferLimit != 4<<20 {
		t.Errorf("memory limit %d, want 4 MiB", c.q.bufferLimit)
	}
	// Unlimited: no shaper, the 1514-byte quantum, no memory limit but
	// 10240 packets of psched_mtu.
	u := newCakeTest(t, CakeConfig{}, FramingIP)
	if u.q.rateNs != 0 || u.q.tins[0].flowQuantum != 1514 || u.q.bufferLimit != 10240*1500 {
		t.Errorf("unlimited: rate_ns %d quantum %d limit %d", u.q.rateNs, u.q.tins[0].flowQuantum, u.q.bufferLimit)
	}
}

// cake_calc_overhead: with the overhead flag the device's header goes
// and the overhead comes; the mpu floors it; atm takes 53 bytes a 48-byte
// cell, ptm a byte in 64 (rounded up).
func TestCakeOverheadArithmetic(t *testing.T) {
	byFraming := map[Framing]*cakeTest{FramingIP: newCakeTest(t, CakeConfig{}, FramingIP), FramingEthernet: newCakeTest(t, CakeConfig{}, FramingEthernet)}
	for _, c := range []struct {
		cfg     CakeConfig
		framing Framing
		ipLen   int
		want    uint32
	}{
		{CakeConfig{}, FramingIP, 1000, 1000},
		{CakeConfig{}, FramingEthernet, 1000, 1014},                                          // raw: the device's length
		{CakeConfig{Overhead: 5}, FramingEthernet, 1000, 1019},                               // raw overhead 5
		{CakeConfig{Overhead: 18, Compensate: true}, FramingEthernet, 1000, 1018},            // the MAC header replaced
		{CakeConfig{Overhead: 18, Compensate: true}, FramingIP, 1000, 1018},                  // the same on TUN
		{CakeConfig{Overhead: 18, Compensate: true, MPU: 64}, FramingIP, 40, 64},             // 58 < mpu
		{CakeConfig{Overhead: 18, Compensate: true, ATM: CakeATMCells}, FramingIP, 100, 159}, // 118: 3 cells
		{CakeConfig{Overhead: 30, Compensate: true, ATM: CakePTM}, FramingIP, 1000, 1030 + 17},
		{CakeConfig{Overhead: -20, Compensate: true}, FramingIP, 1000, 980},
	} {
		k := byFraming[c.framing]
		k.q.apply(0, c.cfg)
		p := k.udp(c.ipLen, 1, 1, 1, 0)
		if got := k.q.adjusted(p, false); got != c.want {
			t.Errorf("%+v on %v, %d bytes: adjusted %d, want %d", c.cfg, c.framing, c.ipLen, got, c.want)
		}
		p.Free()
	}
}

// run drives c from 0 until end: before each dequeue top tops up the
// queues, and every packet that leaves is passed to out and freed.
func (c *cakeTest) run(end clock.Time, top func(now clock.Time), out func(now clock.Time, p *packet.Packet)) {
	now := clock.Time(0)
	for now < end {
		top(now)
		p, next := c.q.Dequeue(now)
		if p == nil {
			if next == clock.Never {
				next = now + clock.Time(time.Millisecond)
			}
			now = next
			continue
		}
		out(now, p)
		p.Free()
	}
}

// The test: at bandwidth 10mbit with overhead 18 mpu 64, cake
// delivers IP bytes at rate * IPlen / (IPlen + 18). Each 1000-byte packet
// is charged 1018 bytes of 800 ns (cake_set_rate's 10 Mbit/s), so the
// packets leave 814.4 µs apart and carry 1 250 000 * 1000/1018 bytes a
// second.
func TestCakeOverheadRate(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Bandwidth: 1250000, Overhead: 18, MPU: 64, Compensate: true}, FramingIP)
	var first, last clock.Time
	var bytes, n int
	c.run(clock.Time(2*time.Second), func(now clock.Time) {
		for c.q.Len() < 3 {
			c.q.Enqueue(now, c.udp(1000, 1, 1, 1, 0))
		}
	}, func(now clock.Time, p *packet.Packet) {
		if n > 0 {
			if gap := now - last; n > 1 && gap != 814400 {
				t.Fatalf("packet %d left %d ns after the one before, want 814400", n, gap)
			}
			bytes += p.Len()
		} else {
			first = now
		}
		last = now
		n++
	})
	got := float64(bytes) / (float64(last-first) / 1e9)
	want := 1250000 * 1000.0 / 1018
	if math.Abs(got/want-1) > 0.005 {
		t.Errorf("IP payload %.0f bytes/s, want %.0f within 0.5%%", got, want)
	}
	if len(c.rec.drops) != 0 {
		t.Errorf("%d drops below target", len(c.rec.drops))
	}
}

// triple-isolate shares the link between hosts before flows: host A with
// one flow and host B with eight, each flow to a server of its own, get
// equal shares (B's flows share B's quantum: quantum_div[8]).
func TestCakeTripleIsolate(t *testing.T) {
	for _, c := range []struct {
		mode CakeFlowMode
		want float64
	}{{CakeTripleIsolate, 0.5}, {CakeDualSrcHost, 0.5}, {CakeSrcHost, 0.5}, {CakeFlows, 1.0 / 9}} {
		k := newCakeTest(t, CakeConfig{Bandwidth: 1250000, FlowMode: c.mode}, FramingIP)
		got := k.hostShares()
		share := float64(got[0]) / float64(got[0]+got[1])
		if math.Abs(share/c.want-1) > 0.05 {
			t.Errorf("%v: host A carried %d bytes, B %d: A's share %.3f, want %.3f within 5%%", c.mode, got[0], got[1], share, c.want)
		}
	}
}

// hostShares runs 10.0.0.1 with one flow to 10.1.0.1 and 10.0.0.2 with
// eight, each to a server of its own, every flow kept backlogged, for 2 s,
// and returns the bytes each host got through.
func (c *cakeTest) hostShares() [2]int {
	var got [2]int
	queued := map[uint16]int{}
	drops := 0
	c.run(clock.Time(2*time.Second), func(now clock.Time) {
		for ; drops < len(c.rec.drops); drops++ {
			queued[c.rec.drops[drops].port]--
		}
		for i := range 9 {
			port, src, dst := uint16(100+i), byte(2), byte(10+i)
			if i == 0 {
				src, dst = 1, 1
			}
			for queued[port] < 4 {
				c.q.Enqueue(now, c.udp(1000, src, dst, port, 0))
				queued[port]++
			}
		}
	}, func(now clock.Time, p *packet.Packet) {
		queued[srcPort(p)]--
		got[p.Bytes()[15]-1] += p.Len()
	})
	return got
}

// diffserv4's voice tin (EF) goes first while it stays within its
// threshold (a quarter of the rate): an EF flow of 200-byte packets every
// 10 ms waits at most for the bulk packet being sent (1.2 ms at 10
// Mbit/s), never for the best-effort queue, which four saturating flows
// keep long.
func TestCakeDiffserv4Voice(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Bandwidth: 1250000, Diffserv: CakeDiffserv4}, FramingIP)
	nextEF := clock.Time(0)
	var worst clock.Time
	efs := 0
	c.run(clock.Time(2*time.Second), func(now clock.Time) {
		for c.q.Len() < 60 {
			c.q.Enqueue(now, c.udp(1500, 1, 1, uint16(100+c.seq%4), 0))
		}
		for nextEF <= now {
			p := c.udp(200, 2, 2, 300, 46<<2)
			c.q.Enqueue(nextEF, p)
			nextEF += clock.Time(10 * time.Millisecond)
		}
	}, func(now clock.Time, p *packet.Packet) {
		if packet.DSCP(p.Bytes()) == 46 {
			efs++
			worst = max(worst, now-p.Enqueued)
		}
	})
	if efs < 190 || worst >= clock.Time(5*time.Millisecond) {
		t.Errorf("%d EF packets, the worst waited %v; want about 200 within 5 ms", efs, time.Duration(worst))
	}
	if x := c.q.XStats(); x.Tins[3].SentPackets == 0 || x.Tins[1].SentPackets == 0 {
		t.Errorf("tins %+v: want voice and best effort used", x.Tins)
	}
}

// COBALT's inverse square root cache: four Newton steps from the entry
// before come within 0.2% of 2^32/sqrt(count).
func TestCobaltInvSqrtCache(t *testing.T) {
	if cobaltInvSqrtCache[0] != math.MaxUint32 {
		t.Errorf("entry 0 %#x, want ~0", cobaltInvSqrtCache[0])
	}
	for n := 1; n < cobaltInvSqrtCacheLen; n++ {
		want := math.Exp2(32) / math.Sqrt(float64(n))
		if got := float64(cobaltInvSqrtCache[n]); math.Abs(got/want-1) > 0.002 {
			t.Errorf("entry %d: %.0f, want %.0f", n, got, want)
		}
	}
}

// A standing queue of ECN-capable packets is marked, never dropped (BLUE
// has not woken: nothing overflowed). At 1 Mbit/s (8000 ns a byte) the
// MTU takes 12 ms, so target is 18 ms and interval 100 + 18 - 5 = 113
// ms; a packet is over target once its sojourn passes 4 MTU times, 48 ms:
// the 1000-byte packet leaving at 56 ms. A fresh flow's rec_inv_sqrt is
// 0, so cobalt_control puts its first signal at once: the next packet, at
// 64 ms, is marked. Then the schedule moves on 113 ms/sqrt(count) from
// the 56 ms it started at, and each mark falls on the next packet (8 ms
// grid).
func TestCakeCobaltMarks(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Bandwidth: 125000, Diffserv: CakeBestEffort}, FramingIP)
	var marks []clock.Time
	c.run(clock.Time(3*time.Second), func(now clock.Time) {
		for c.q.Len() < 10 {
			c.q.Enqueue(now, c.udp(1000, 1, 1, 1, 2)) // ECT(0)
		}
	}, func(now clock.Time, p *packet.Packet) {
		if packet.ECNOf(p.Bytes()) == packet.CE {
			marks = append(marks, now)
		}
	})
	if len(c.rec.drops) != 0 || len(marks) < 5 {
		t.Fatalf("%d drops, %d marks", len(c.rec.drops), len(marks))
	}
	if got := c.q.XStats().Tins[0].ECNMarked; int(got) != len(marks) || len(c.rec.marks) != len(marks) {
		t.Errorf("tin counts %d marks, observer %d, packets %d", got, len(c.rec.marks), len(marks))
	}
	if marks[0] != 64*ms {
		t.Errorf("first mark at %v, want 64ms", time.Duration(marks[0]))
	}
	// The schedule runs from drop_next, set to 56 ms when the sojourn
	// first passed target.
	next := 56 * ms
	for i := 1; i < 5; i++ {
		next += clock.Time(113e6 * float64(cobaltInvSqrtCache[i+1]) / (1 << 32))
		want := (next + 8*ms - 1) / (8 * ms) * (8 * ms)
		if marks[i] != want {
			t.Errorf("mark %d at %v, want %v (113 ms/sqrt(%d) after the last schedule, on the packet grid)", i, time.Duration(marks[i]), time.Duration(want), i+1)
		}
	}
}

// Past the memory limit cake drops from the head of the fattest queue,
// and that queue's BLUE wakes.
func TestCakeOverflow(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Bandwidth: 125000, Memlimit: 20000, Diffserv: CakeBestEffort, FlowMode: CakeFlows}, FramingIP)
	for range 5 {
		c.q.Enqueue(0, c.udp(200, 1, 1, 7, 0))
	}
	congested := 0
	for range 20 {
		if c.q.Enqueue(0, c.udp(1000, 1, 1, 8, 0)) == Congested {
			congested++
		}
	}
	// Each 1000-byte packet holds 1804 bytes of memory, a 200-byte one
	// 1004: 5 * 1004 + n * 1804 <= 20000 leaves 8 of the fat flow.
	if got := c.rec.count(ReasonOverflow); got != 12 || congested != 12 {
		t.Errorf("%d overflow drops, %d Congested verdicts; want 12 and 12", got, congested)
	}
	for _, d := range c.rec.drops {
		if d.port != 8 {
			t.Fatalf("dropped from flow %d, want only the fattest (8)", d.port)
		}
	}
	if c.q.Len() != 13 || c.q.bufferUsed > 20000 {
		t.Errorf("holds %d packets, %d bytes of memory", c.q.Len(), c.q.bufferUsed)
	}
	idx := c.q.hash(&c.q.tins[0], c.udp(1000, 1, 1, 8, 0))
	if c.q.tins[0].flows[idx].cv.pDrop != 1<<24 {
		t.Errorf("BLUE p_drop %d, want p_inc", c.q.tins[0].flows[idx].cv.pDrop)
	}
	c.q.Flush(0)
	coretest.CheckLive(t, c.pool, 1)
}

// wash clears the DSCP (keeping ECN, the checksum right) after the tin
// was chosen by it.
func TestCakeWash(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Wash: true}, FramingIP)
	c.q.Enqueue(0, c.udp(100, 1, 1, 1, 46<<2|1))
	p, _ := c.q.Dequeue(0)
	b := p.Bytes()
	if packet.DSCP(b) != 0 || packet.ECNOf(b) != packet.ECT1 || !packet.IPv4HeaderValid(b) {
		t.Errorf("washed TOS %#x, checksum valid %v", b[1], packet.IPv4HeaderValid(b))
	}
	if x := c.q.XStats(); x.Tins[2].SentPackets != 1 {
		t.Errorf("voice tin sent %d, want 1 (diffserv3 puts EF there)", x.Tins[2].SentPackets)
	}
	p.Free()
}

// tcpAck returns a pure ACK of one connection acknowledging ack.
func (c *cakeTest) tcpAck(ack uint32, flags uint8) *packet.Packet {
	return c.tcpAckV(false, ack, flags)
}

func (c *cakeTest) tcpAckV(v6 bool, ack uint32, flags uint8) *packet.Packet {
	p := c.pool.Get()
	if err := packet.BuildTCP(p, packet.TCP{V6: v6, SrcPort: 5001, DstPort: 40000, Ack: ack, Flags: flags, MSS: 1448}); err != nil {
		c.t.Fatal(err)
	}
	p.Seq = int64(ack)
	return p
}

// cake_ack_filter keeps the newest pure ACK and one before it: the third
// ACK drops the first; aggressive drops the one right before at once; an
// ACK whose ECE bit changed is not dropped.
func TestCakeAckFilter(t *testing.T) {
	seqs := func(c *cakeTest) []int64 {
		var s []int64
		for c.q.Len() > 0 {
			p, _ := c.q.Dequeue(0)
			s = append(s, p.Seq)
			p.Free()
		}
		return s
	}
	c := newCakeTest(t, CakeConfig{AckFilter: CakeAckFilterOn}, FramingIP)
	for _, a := range []uint32{100, 200, 300} {
		c.q.Enqueue(0, c.tcpAck(a, 0))
	}
	if got := seqs(c); len(got) != 2 || got[0] != 200 || got[1] != 300 || c.rec.count(ReasonAckFilter) != 1 {
		t.Errorf("ack-filter left %v, %d filtered; want [200 300], 1", got, c.rec.count(ReasonAckFilter))
	}
	a := newCakeTest(t, CakeConfig{AckFilter: CakeAckFilterAggressive}, FramingIP)
	for _, x := range []uint32{100, 200, 300} {
		a.q.Enqueue(0, a.tcpAck(x, 0))
	}
	if got := seqs(a); len(got) != 1 || got[0] != 300 {
		t.Errorf("aggressive left %v, want [300]", got)
	}
	v6 := newCakeTest(t, CakeConfig{AckFilter: CakeAckFilterOn}, FramingIP)
	for _, x := range []uint32{100, 200, 300} {
		v6.q.Enqueue(0, v6.tcpAckV(true, x, 0))
	}
	if got := seqs(v6); len(got) != 2 || got[0] != 200 {
		t.Errorf("IPv6: left %v, want [200 300]", got)
	}
	// A SYN-ACK is never dropped (cake_tcph_may_drop wants ACK alone).
	d := newCakeTest(t, CakeConfig{AckFilter: CakeAckFilterAggressive}, FramingIP)
	d.q.Enqueue(0, d.tcpAck(100, 0x12)) // SYN|ACK
	d.q.Enqueue(0, d.tcpAck(200, 0))
	if got := seqs(d); len(got) != 2 {
		t.Errorf("SYN-ACK: left %v, want both", got)
	}
	e := newCakeTest(t, CakeConfig{AckFilter: CakeAckFilterAggressive}, FramingIP)
	e.q.Enqueue(0, e.tcpAck(100, 0x10))
	e.q.Enqueue(0, e.tcpAck(200, 0x50)) // ACK|ECE
	if got := seqs(e); len(got) != 2 {
		t.Errorf("ECE change: left %v, want both", got)
	}
	if x := c.q.XStats(); x.Tins[1].AcksDropped != 1 {
		t.Errorf("ack_drops %d", x.Tins[1].AcksDropped)
	}
}

// A GSO super-packet is split into its segments (split-gso, the
// default), each queued and charged on its own; no-split-gso keeps it
// whole, charged segment by segment.
func TestCakeSplitGSO(t *testing.T) {
	c := newCakeTest(t, CakeConfig{Bandwidth: 1250000}, FramingIP)
	p := c.pool.Get()
	if err := packet.BuildTCP(p, packet.TCP{SrcPort: 1, DstPort: 2, Payload: 3000, MSS: 1000}); err != nil {
		t.Fatal(err)
	}
	c.q.Enqueue(0, p)
	if c.q.Len() != 3 || c.q.qlen != 3 {
		t.Fatalf("split: %d packets held, want 3", c.q.Len())
	}
	n := 0
	c.run(clock.Time(time.Second), func(clock.Time) {}, func(_ clock.Time, p *packet.Packet) {
		if p.Segments() != 1 || p.Len() != 1052 {
			t.Errorf("segment of %d segments, %d bytes", p.Segments(), p.Len())
		}
		n++
	})
	if n != 3 {
		t.Errorf("%d segments out", n)
	}
	w := newCakeTest(t, CakeConfig{Bandwidth: 1250000, NoSplitGSO: true}, FramingIP)
	p = w.pool.Get()
	if err := packet.BuildTCP(p, packet.TCP{SrcPort: 1, DstPort: 2, Payload: 2500, MSS: 1000}); err != nil {
		t.Fatal(err)
	}
	if got := w.q.adjusted(p, false); got != 2*1052+552 {
		t.Errorf("no-split-gso: adjusted %d, want %d", got, 2*1052+552)
	}
	w.q.Enqueue(0, p)
	if w.q.Len() != 3 {
		t.Errorf("no-split-gso: %d units held, want 3 segments", w.q.Len())
	}
}

func TestCakeWarnings(t *testing.T) {
	if w := Warnings(CakeConfig{Fwmark: 0xff}, nil); len(w) != 1 || !strings.Contains(w[0], "no firewall mark") {
		t.Errorf("fwmark: %q", w)
	}
	if w := Warnings(CakeConfig{}, nil); w != nil {
		t.Errorf("default: %q", w)
	}
}

// What wanlab cannot build is refused, naming why.
func TestCakeRefuses(t *testing.T) {
	for _, cfg := range []CakeConfig{{AutorateIngress: true}, {NAT: true}, {Overhead: -65}, {Overhead: 40000}, {MPU: -1}, {MPU: 257}} {
		if _, err := NewCake(cfg, &Env{}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

func BenchmarkCake(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := NewCake(CakeConfig{Bandwidth: 1 << 40}, &Env{})
	if err != nil {
		b.Fatal(err)
	}
	ps := make([]*packet.Packet, 48)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, uint16(1000+i%4), 0x02, int64(i))
	}
	benchSteady(b, q, ps, 40)
}

// In ingress mode a dropped packet is charged to the shaper
// (cake_advance_shaper with drop set): the global schedule moves on by it,
// the failsafe schedule (1.5 times a delivered packet's time) does not,
// so the packets after two overflow drops leave at the failsafe's pace
// until the schedule is reached. 1000-byte packets at 10 Mbit/s on TUN
// take 800 µs; egress sends them 800 µs apart.
func TestCakeIngressCharges(t *testing.T) {
	us := clock.Time(time.Microsecond)
	for _, c := range []struct {
		ingress bool
		want    []clock.Time
	}{
		{false, []clock.Time{0, 800 * us, 1600 * us, 2400 * us, 3200 * us, 4000 * us, 4800 * us}},
		{true, []clock.Time{0, 1200 * us, 2400 * us, 3600 * us, 4800 * us, 5600 * us, 6400 * us}},
	} {
		k := newCakeTest(t, CakeConfig{Bandwidth: 1250000, Memlimit: 10 * (1000 + cakeMemOverhead), Ingress: c.ingress}, FramingIP)
		for range 12 {
			k.q.Enqueue(0, k.udp(1000, 1, 1, 1, 0))
		}
		if got := k.rec.count(ReasonOverflow); got != 2 {
			t.Fatalf("ingress %v: %d overflow drops, want 2", c.ingress, got)
		}
		var got []clock.Time
		k.run(clock.Time(6500*time.Microsecond), func(clock.Time) {}, func(now clock.Time, _ *packet.Packet) { got = append(got, now) })
		if len(got) < len(c.want) || !slicesEqual(got[:len(c.want)], c.want) {
			t.Errorf("ingress %v: departures %v, want %v", c.ingress, got, c.want)
		}
	}
}

func slicesEqual(a, b []clock.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Peek decides once: Dequeue hands over the packet Peek showed, and Len
// counts it meanwhile. A change to fewer tins drops what the tins that go
// held (cake_clear_tin), and keeps the rest.
func TestCakePeekAndChange(t *testing.T) {
	k := newCakeTest(t, CakeConfig{Diffserv: CakeDiffserv4}, FramingIP)
	k.q.Enqueue(0, k.udp(100, 1, 1, 1, 0))     // best effort
	k.q.Enqueue(0, k.udp(100, 1, 1, 2, 46<<2)) // voice
	k.q.Enqueue(0, k.udp(100, 1, 1, 3, 8<<2))  // CS1: bulk
	p, _ := k.q.Peek(0)
	if p == nil || k.q.Len() != 3 {
		t.Fatalf("peek %v, len %d", p, k.q.Len())
	}
	if d, _ := k.q.Dequeue(0); d != p {
		t.Fatalf("dequeued another packet than the one peeked")
	}
	d := p.Seq
	p.Free()
	if err := k.q.Change(0, CakeConfig{Diffserv: CakeBestEffort}); err != nil {
		t.Fatal(err)
	}
	// Unlimited, the tins take turns from tin 0 (best effort), whose
	// deficit starts at 0, not below: its packet left first. Voice (tin
	// 3) and bulk (tin 1) are not in besteffort's one tin: they go.
	if d != 0 || k.q.Len() != 0 || k.rec.count(ReasonFlushed) != 2 {
		t.Errorf("dequeued seq %d; after the change %d held, %d flushed; want 0, 0, 2", d, k.q.Len(), k.rec.count(ReasonFlushed))
	}
	k.q.Flush(0)
	coretest.CheckLive(t, k.pool, 0)
}

// cake_config_precedence and _diffserv8: eight tins, each with 7/8 of the
// threshold and the DRR weight of the one before (the weight from 256:
// 256 224 196 171 149 130 113 98).
func TestCakeEightTins(t *testing.T) {
	k := newCakeTest(t, CakeConfig{Bandwidth: 1 << 20, Diffserv: CakeDiffserv8}, FramingIP)
	rate := uint64(1 << 20)
	for i, w := range []uint16{256, 224, 196, 171, 149, 130, 113, 98} {
		if b := &k.q.tins[i]; b.tinQuantum != w || b.rateBps != rate {
			t.Errorf("tin %d: weight %d threshold %d, want %d %d", i, b.tinQuantum, b.rateBps, w, rate)
		}
		rate = rate * 7 >> 3
	}
	// diffserv8's table: EF (46) is tin 6 ("minimum latency"), CS1 (8)
	// tin 1, LE (1) tin 0, CS7 (56) tin 7, AF11 (10) tin 1.
	for dscp, want := range map[uint8]int{46: 6, 8: 1, 1: 0, 56: 7, 10: 1, 0: 2} {
		p := k.udp(100, 1, 1, 1, dscp<<2)
		if got := k.q.selectTin(p); got != want {
			t.Errorf("DSCP %d: tin %d, want %d", dscp, got, want)
		}
		p.Free()
	}
}

// The set-associative hash: flows whose hashes fall in one set of 8
// queues each get a queue of the set (way_misses), a ninth shares one
// (way_collisions), and a flow found again in its own queue is a direct
// hit.
func TestCakeSetAssociative(t *testing.T) {
	k := newCakeTest(t, CakeConfig{FlowMode: CakeFlows}, FramingIP)
	set := -1
	var ports []uint16
	for port := uint16(1); len(ports) < 9; port++ {
		p := k.udp(100, 1, 1, port, 0)
		s := int(p.FlowHash(k.q.seed) % cakeQueues / cakeSetWays)
		p.Free()
		if set < 0 {
			set = s
		}
		if s == set {
			ports = append(ports, port)
		}
	}
	for _, port := range ports {
		k.q.Enqueue(0, k.udp(100, 1, 1, port, 0))
	}
	b := &k.q.tins[0]
	if b.wayMisses+b.wayDirects != 8 || b.wayCollisions != 1 {
		t.Errorf("directs %d misses %d collisions %d, want 8 queues taken and 1 collision", b.wayDirects, b.wayMisses, b.wayCollisions)
	}
	used := 0
	for i := set * cakeSetWays; i < (set+1)*cakeSetWays; i++ {
		if b.flows[i].q.Len() > 0 {
			used++
		}
	}
	if used != 8 || k.q.Len() != 9 {
		t.Errorf("%d queues of the set used, %d packets held; want 8 and 9", used, k.q.Len())
	}
}
