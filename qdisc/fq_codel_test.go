package qdisc

import (
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// fqTest is an fq_codel with a recorder and a pool.
type fqTest struct {
	t    *testing.T
	q    *FQCoDel
	rec  *recorder
	pool *packet.Pool
	seq  int64
}

// newFQTest makes an fq_codel on a TUN device (FramingIP): the byte
// figures of these tests, the kernel's among them, were worked out on IP
// lengths. TestFQCoDelEthernet checks the Ethernet figures.
func newFQTest(t *testing.T, cfg FQCoDelConfig) *fqTest {
	return newFramedFQTest(t, cfg, FramingIP)
}

func newFramedFQTest(t *testing.T, cfg FQCoDelConfig, f Framing) *fqTest {
	rec := &recorder{}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := NewFQCoDel(cfg, &Env{Observer: rec, Pool: pool, MTU: 1500, Seed: 1, Framing: f})
	if err != nil {
		t.Fatal(err)
	}
	return &fqTest{t: t, q: q, rec: rec, pool: pool}
}

// send enqueues a packet of n bytes from port at now and returns the
// verdict.
func (f *fqTest) send(now clock.Time, port uint16, n int) Verdict {
	p := coretest.UDP(f.pool, n, port, 0, 0)
	p.Seq = f.seq
	f.seq++
	return f.q.Enqueue(now, p)
}

// recv dequeues at now and returns the packet's port (0 if none); the
// packet is freed.
func (f *fqTest) recv(now clock.Time) uint16 {
	p, _ := f.q.Dequeue(now)
	if p == nil {
		return 0
	}
	port := srcPort(p)
	p.Free()
	return port
}

func (f *fqTest) idx(port uint16) int32 {
	p := coretest.UDP(f.pool, 100, port, 0, 0)
	defer p.Free()
	return f.q.flowIndex(p)
}

// distinct asserts that the ports hash to different flows.
func (f *fqTest) distinct(ports ...uint16) {
	seen := map[int32]uint16{}
	for _, port := range ports {
		i := f.idx(port)
		if other, ok := seen[i]; ok {
			f.t.Fatalf("ports %d and %d share flow %d; pick other ports", other, port, i)
		}
		seen[i] = port
	}
}

func (f *fqTest) checkNoLeak() {
	f.t.Helper()
	coretest.CheckLive(f.t, f.pool, f.q.Len())
}

func TestFQCoDelOverflowDropsFromFattestHead(t *testing.T) {
	const a, b = 1, 2
	f := newFQTest(t, FQCoDelConfig{Limit: 10, ECN: true})
	f.distinct(a, b)
	for range 8 {
		f.send(0, a, 1000)
	}
	for range 2 {
		f.send(0, b, 1000)
	}
	// The 11th packet overflows the limit: A (8000 B) is the fattest, and
	// dropping from its head stops once 4000 B (half) are gone.
	if v := f.send(0, b, 1000); v != Queued {
		t.Fatalf("verdict %d, want Queued (B was not the fattest)", v)
	}
	if f.q.Len() != 7 || len(f.rec.drops) != 4 {
		t.Fatalf("qlen %d, %d drops; want 7 and 4", f.q.Len(), len(f.rec.drops))
	}
	for i, d := range f.rec.drops {
		if d.port != a || d.seq != int64(i) || d.why != ReasonOverflow {
			t.Fatalf("drop %d: %+v, want A's packet %d for overflow", i, d, i)
		}
	}
	ia := f.idx(a)
	if f.q.backlogs[ia] != 4000 || f.q.backlogs[f.idx(b)] != 3000 {
		t.Fatalf("backlogs A %d B %d, want 4000 and 3000", f.q.backlogs[ia], f.q.backlogs[f.idx(b)])
	}
	if c := f.q.cvars[ia].count; c != 4 {
		t.Fatalf("A's CoDel count %d, want 4 (raised by the batch)", c)
	}
	if x := f.q.XStats(); x.DropOverlimit != 4 || x.DropOvermemory != 0 {
		t.Fatalf("xstats %+v", x)
	}
	// Fill A up again until it overflows as the fattest: its own packet
	// gets Congested.
	for range 3 {
		if v := f.send(0, a, 1000); v != Queued {
			t.Fatalf("verdict %d below the limit", v)
		}
	}
	if v := f.send(0, a, 1000); v != Congested {
		t.Fatalf("verdict %d, want Congested (A was the fattest)", v)
	}
	if f.q.Len() != 7 || len(f.rec.drops) != 8 {
		t.Fatalf("qlen %d, %d drops; want 7 and 8", f.q.Len(), len(f.rec.drops))
	}
	st := f.q.Stats()
	if st.Drops != 8 || st.DropsByReason[ReasonOverflow] != 8 || st.Backlog != 7000 || st.Qlen != 7 {
		t.Fatalf("stats %+v", st)
	}
	f.checkNoLeak()
}

func TestFQCoDelDropBatch(t *testing.T) {
	const a, b = 1, 2
	f := newFQTest(t, FQCoDelConfig{Limit: 10, DropBatch: 2})
	f.distinct(a, b)
	for range 8 {
		f.send(0, a, 1000)
	}
	for range 3 {
		f.send(0, b, 1000)
	}
	if f.q.Len() != 9 || len(f.rec.drops) != 2 || f.rec.drops[1].seq != 1 {
		t.Fatalf("qlen %d, drops %+v; want 9 and A's first two", f.q.Len(), f.rec.drops)
	}
	f.checkNoLeak()
}

func TestFQCoDelMemoryLimit(t *testing.T) {
	const a = 1
	truesize := 1000 + DefaultFQCoDelMemOverhead
	f := newFQTest(t, FQCoDelConfig{MemoryLimit: 5 * truesize})
	for range 5 {
		if v := f.send(0, a, 1000); v != Queued {
			t.Fatalf("verdict %d at the memory limit", v)
		}
	}
	if x := f.q.XStats(); x.MemoryUsage != uint32(5*truesize) {
		t.Fatalf("memory_usage %d, want %d", x.MemoryUsage, 5*truesize)
	}
	// The 6th exceeds memory_limit: half of A's 6000 B goes, 3 packets.
	if v := f.send(0, a, 1000); v != Congested {
		t.Fatalf("verdict %d, want Congested", v)
	}
	x := f.q.XStats()
	if x.DropOvermemory != 3 || x.DropOverlimit != 3 || x.MemoryUsage != uint32(3*truesize) || f.q.Len() != 3 {
		t.Fatalf("xstats %+v, qlen %d", x, f.q.Len())
	}
	for f.recv(0) != 0 {
	}
	if x := f.q.XStats(); x.MemoryUsage != 0 {
		t.Fatalf("memory_usage %d after draining", x.MemoryUsage)
	}
	f.checkNoLeak()
}

func TestFQCoDelSparseFlowLatency(t *testing.T) {
	const bulk, ping = 1000, 2000
	f := newFQTest(t, FQCoDelConfig{ECN: true})
	f.distinct(bulk, ping)
	// 10 Mbit/s: 800 ns per byte, 1.2 ms for a 1500 B packet.
	tx := func(n int) time.Duration { return time.Duration(n) * 800 * time.Nanosecond }
	const end = clock.Time(10 * time.Second)
	var now, linkFree clock.Time
	nextBulk, nextPing := clock.Time(0), clock.Time(37300*time.Microsecond)
	var pings int
	var maxWait, maxLatency time.Duration
	var bulkBytes int
	for now < end {
		for nextBulk <= now { // 12 Mbit/s offered: saturating
			f.send(now, bulk, 1500)
			nextBulk = nextBulk.Add(time.Millisecond)
		}
		for nextPing <= now {
			f.send(now, ping, 100)
			nextPing = nextPing.Add(100 * time.Millisecond)
		}
		if linkFree <= now {
			if p, _ := f.q.Dequeue(now); p != nil {
				linkFree = now.Add(tx(p.Len()))
				if srcPort(p) == ping {
					pings++
					maxWait = max(maxWait, now.Sub(p.Enqueued))
					maxLatency = max(maxLatency, linkFree.Sub(p.Enqueued))
				} else {
					bulkBytes += p.Len()
				}
				p.Free()
			}
		}
		next := clock.Min(nextBulk, nextPing)
		if linkFree > now {
			next = clock.Min(next, linkFree)
		}
		now = next
	}
	t.Logf("%d pings, max wait %v, max latency %v, bulk %.3f Mbit/s, %d CoDel drops", pings, maxWait, maxLatency,
		float64(bulkBytes)*8/end.Seconds()/1e6, f.q.Stats().DropsByReason[ReasonCoDel])
	if pings < 99 {
		t.Fatalf("%d pings delivered, want 99 or more", pings)
	}
	if maxWait > 1200*time.Microsecond || maxLatency > 1280*time.Microsecond {
		t.Fatalf("ping waited up to %v (latency %v), want <= 1.2ms (+80µs)", maxWait, maxLatency)
	}
	if f.q.Stats().DropsByReason[ReasonCoDel] == 0 {
		t.Fatal("the bulk flow was never dropped: it did not saturate the link")
	}
	for _, d := range f.rec.drops {
		if d.port == ping {
			t.Fatalf("a ping was dropped: %+v", d)
		}
	}
	if rate := float64(bulkBytes) * 8 / end.Seconds(); rate < 9.8e6 {
		t.Fatalf("bulk got %.2f Mbit/s of the 10", rate/1e6)
	}
	f.checkNoLeak()
}

func TestFQCoDelFairBytes(t *testing.T) {
	const a, b = 1, 2
	f := newFQTest(t, FQCoDelConfig{})
	f.distinct(a, b)
	for range 400 {
		f.send(0, a, 1500)
	}
	for range 2000 {
		f.send(0, b, 300)
	}
	quantum := f.q.Config().(FQCoDelConfig).Quantum
	var got [3]int
	for i := range 1200 {
		switch f.recv(0) {
		case a:
			got[1] += 1500
		case b:
			got[2] += 300
		default:
			t.Fatalf("dequeue %d: no packet", i)
		}
		if d := got[1] - got[2]; d > quantum || d < -quantum {
			t.Fatalf("after %d packets A has %d B and B %d B: more than a quantum (%d) apart", i+1, got[1], got[2], quantum)
		}
	}
	if got[1] < 200000 || got[2] < 200000 {
		t.Fatalf("bytes A %d B %d", got[1], got[2])
	}
	f.checkNoLeak()
}

// On Ethernet, the default, fq_codel counts every packet with its 14-byte
// header: the default quantum is 1514, backlog and memory include the
// header, and DRR shares framed bytes, so two flows of 1500- and 300-byte
// IP packets stay within a quantum of each other counting 1514 and 314
// bytes per packet (counting IP bytes, they would drift apart by 14 bytes
// for every packet the small flow sends more).
func TestFQCoDelEthernet(t *testing.T) {
	const a, b = 1, 2
	f := newFramedFQTest(t, FQCoDelConfig{}, FramingEthernet)
	f.distinct(a, b)
	if q := f.q.Config().(FQCoDelConfig).Quantum; q != 1514 {
		t.Fatalf("default quantum %d, want 1514", q)
	}
	f.send(0, a, 1000)
	if f.q.Backlog() != 1014 || f.q.XStats().MemoryUsage != 1014+DefaultFQCoDelMemOverhead {
		t.Fatalf("backlog %d memory %d, want 1014 and 1014+%d", f.q.Backlog(), f.q.XStats().MemoryUsage, DefaultFQCoDelMemOverhead)
	}
	f.recv(0)
	for range 400 {
		f.send(0, a, 1500)
	}
	for range 2000 {
		f.send(0, b, 300)
	}
	var framedA, framedB int
	for i := range 1200 {
		switch f.recv(0) {
		case a:
			framedA += 1514
		case b:
			framedB += 314
		default:
			t.Fatalf("dequeue %d: no packet", i)
		}
		if d := framedA - framedB; d > 1514 || d < -1514 {
			t.Fatalf("after %d packets A has %d framed bytes and B %d: more than a quantum apart", i+1, framedA, framedB)
		}
	}
	if st := f.q.Stats(); st.Bytes != uint64(1014+framedA+framedB) {
		t.Fatalf("Sent %d bytes, want %d (framed)", st.Bytes, 1014+framedA+framedB)
	}
	f.checkNoLeak()
}

// TestFQCoDelNewFlowPriority checks fq_codel_dequeue's rule: a flow regains new-flow
// priority only after it has been unlinked.
func TestFQCoDelNewFlowPriority(t *testing.T) {
	const a, s = 1, 2
	f := newFQTest(t, FQCoDelConfig{Quantum: 4500})
	f.distinct(a, s)
	for range 20 {
		f.send(0, a, 1500)
	}
	steps := []struct {
		send     bool   // S sends a 100 B packet first
		want     uint16 // port dequeued
		newCount uint32
	}{
		{false, a, 1}, {false, a, 1}, {false, a, 1}, // A spends its quantum
		{false, a, 1}, // A goes to the old list with a new quantum
		{true, s, 2},  // S is new: it goes ahead of A
		{false, a, 2}, // S, empty, moves to the old list instead of leaving
		{true, a, 2},  // S sends again: still on the old list, so no priority
		{false, s, 2}, // A's quantum is spent: it rotates behind S
		{false, a, 2}, // S, empty on the old list, is unlinked
		{true, s, 3},  // so its next packet makes it new again
	}
	for i, st := range steps {
		if st.send {
			f.send(0, s, 100)
		}
		if got := f.recv(0); got != st.want {
			t.Fatalf("step %d: dequeued port %d, want %d", i, got, st.want)
		}
		if x := f.q.XStats(); x.NewFlowCount != st.newCount {
			t.Fatalf("step %d: new_flow_count %d, want %d", i, x.NewFlowCount, st.newCount)
		}
	}
	if x := f.q.XStats(); x.NewFlowsLen != 1 || x.OldFlowsLen != 1 {
		t.Fatalf("new_flows_len %d old_flows_len %d, want 1 and 1", x.NewFlowsLen, x.OldFlowsLen)
	}
	f.checkNoLeak()
}

// TestFQCoDelSingleFlowIsCoDel runs one flow through codel and fq_codel
// with the same standing queue: the drops (and, for ECT traffic with ecn,
// the marks) must be the same packets at the same times.
func TestFQCoDelSingleFlowIsCoDel(t *testing.T) {
	run := func(build func(env *Env) Qdisc, tos uint8) *standingQueue {
		s := startStanding(t, build, tos)
		for range 1_000_000 {
			s.step(1)
		}
		s.checkNoLeak()
		return s
	}
	fq := func(ecn bool) func(env *Env) Qdisc {
		return func(env *Env) Qdisc {
			q, err := NewFQCoDel(FQCoDelConfig{ECN: ecn}, env)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
	}
	codelDrops := run(newTestCoDel(t, CoDelConfig{}), 0).rec.drops
	fqDrops := run(fq(false), 0).rec.drops
	codelMarks := run(newTestCoDel(t, CoDelConfig{ECN: true}), uint8(packet.ECT0))
	fqMarks := run(fq(true), uint8(packet.ECT0))
	if len(codelDrops) < 10 {
		t.Fatalf("only %d codel drops", len(codelDrops))
	}
	same := func(what string, x, y []seen) {
		if len(x) != len(y) {
			t.Fatalf("%s: %d and %d events", what, len(x), len(y))
		}
		for i := range x {
			// The same packet at the same time for the same reason; the
			// disciplines that acted differ, of course.
			a, b := x[i], y[i]
			a.kind, b.kind = "", ""
			if a != b {
				t.Fatalf("%s: event %d differs: %+v and %+v", what, i, x[i], y[i])
			}
		}
	}
	same("drops", codelDrops, fqDrops)
	same("marks", codelMarks.rec.marks, fqMarks.rec.marks)
	if len(fqMarks.rec.drops) != 0 || fqMarks.delivered+fqMarks.q.Len() != fqMarks.enqueued {
		t.Fatalf("fq_codel with ECT traffic: %d drops", len(fqMarks.rec.drops))
	}
	// Marks come at the times drops would.
	for i, d := range codelDrops {
		if m := fqMarks.rec.marks[i]; m.t != d.t || m.why != ReasonCoDel {
			t.Fatalf("mark %d at %v (%v), drop at %v", i, m.t, m.why, d.t)
		}
	}
}

func TestFQCoDelHashSymmetric(t *testing.T) {
	f := newFQTest(t, FQCoDelConfig{})
	pkt := func(src, dst [4]byte, sport, dport uint16) *packet.Packet {
		p := f.pool.Get()
		p.SetLen(100)
		packet.WriteUDP4(p.Bytes(), packet.UDP4{Src: src, Dst: dst, SrcPort: sport, DstPort: dport}, 100)
		return p
	}
	x, y := [4]byte{10, 0, 0, 1}, [4]byte{192, 168, 7, 9}
	seen := map[int32]bool{}
	for port := uint16(1); port <= 64; port++ {
		fwd, rev := pkt(x, y, port, 443), pkt(y, x, 443, port)
		i, j := f.q.flowIndex(fwd), f.q.flowIndex(rev)
		if i != j {
			t.Fatalf("port %d: forward flow %d, reverse flow %d", port, i, j)
		}
		if i < 0 || int(i) >= len(f.q.flows) {
			t.Fatalf("flow index %d outside [0,%d)", i, len(f.q.flows))
		}
		seen[i] = true
		fwd.Free()
		rev.Free()
	}
	// 64 flows into 1024 buckets: a handful of collisions at most.
	if len(seen) < 58 {
		t.Fatalf("64 flows landed in only %d buckets", len(seen))
	}
	f.checkNoLeak()
}

func TestFQCoDelPeek(t *testing.T) {
	const a, b = 1, 2
	f := newFQTest(t, FQCoDelConfig{Limit: 3})
	f.distinct(a, b)
	f.send(0, a, 1000)
	f.send(0, b, 500)
	p, _ := f.q.Peek(0)
	if p == nil || srcPort(p) != a || f.q.Len() != 2 || f.q.Backlog() != 1500 {
		t.Fatalf("peek: %v, len %d backlog %d", p != nil, f.q.Len(), f.q.Backlog())
	}
	if x := f.q.XStats(); x.MemoryUsage != uint32(500+DefaultFQCoDelMemOverhead) {
		t.Fatalf("memory_usage %d counts the peeked packet", x.MemoryUsage)
	}
	if p2, _ := f.q.Peek(0); p2 != p {
		t.Fatal("second peek returned another packet")
	}
	// The peeked packet still counts against limit, but no longer in its
	// flow's backlog: B (1500 B) is the fattest and loses 1000 B.
	f.send(0, b, 500)
	if v := f.send(0, b, 500); v != Congested || f.q.Len() != 2 || len(f.rec.drops) != 2 {
		t.Fatalf("verdict %d, len %d, %d drops; want Congested, 2 and 2", v, f.q.Len(), len(f.rec.drops))
	}
	if got, _ := f.q.Dequeue(0); got != p {
		t.Fatal("dequeue did not return the peeked packet")
	}
	p.Free()
	if st := f.q.Stats(); st.Packets != 1 || st.Bytes != 1000 {
		t.Fatalf("stats %+v", st)
	}
	f.checkNoLeak()
}

func TestFQCoDelCEThreshold(t *testing.T) {
	f := newFQTest(t, FQCoDelConfig{CEThreshold: time.Millisecond})
	// 1 ms is 976 units: a packet is marked once it waited 977.
	for _, tc := range []struct {
		in, out clock.Time
		marked  bool
	}{
		{0, clock.Time(976 * codelTick), false},
		{clock.Time(976 * codelTick), clock.Time(1953 * codelTick), true},
	} {
		f.q.Enqueue(tc.in, coretest.UDP(f.pool, 100, 1, uint8(packet.ECT0), 0))
		p, _ := f.q.Dequeue(tc.out)
		if got := packet.ECNOf(p.Bytes()) == packet.CE; got != tc.marked {
			t.Fatalf("sojourn %v: marked %v, want %v", tc.out.Sub(tc.in), got, tc.marked)
		}
		p.Free()
	}
	if x := f.q.XStats(); x.CEMark != 1 || countEvents(f.rec.marks, ReasonCEThreshold) != 1 {
		t.Fatalf("ce_mark %d, marks %+v", x.CEMark, f.rec.marks)
	}
	f.checkNoLeak()
}

func TestFQCoDelConfig(t *testing.T) {
	q, err := NewFQCoDel(FQCoDelConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := FQCoDelConfig{
		Limit: 10240, Flows: 1024, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond,
		Quantum: 1514, MemoryLimit: 32 << 20, DropBatch: 64, MemOverhead: DefaultFQCoDelMemOverhead,
	}
	if got := q.Config(); got != want {
		t.Fatalf("config %+v, want %+v", got, want)
	}
	// The default quantum and the MTU guard are psched_mtu: 1514 on
	// Ethernet, the MTU alone on TUN.
	for _, tc := range []struct {
		cfg     FQCoDelConfig
		env     Env
		quantum int
		guard   uint32
	}{
		{FQCoDelConfig{}, Env{}, 1514, 1514},
		{FQCoDelConfig{}, Env{Framing: FramingIP}, 1500, 1500},
		{FQCoDelConfig{}, Env{MTU: 9000}, 9014, 9014},
		{FQCoDelConfig{Quantum: 100}, Env{}, 256, 1514},
		{FQCoDelConfig{Quantum: 1 << 20}, Env{}, 1 << 20, 1514},
		{FQCoDelConfig{}, Env{MTU: 100, Framing: FramingIP}, 256, 256},
	} {
		q, err := NewFQCoDel(tc.cfg, &tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Config().(FQCoDelConfig).Quantum; got != tc.quantum || q.params.mtu != tc.guard {
			t.Errorf("%+v on %+v: quantum %d guard %d, want %d and %d", tc.cfg, tc.env, got, q.params.mtu, tc.quantum, tc.guard)
		}
	}
	if q, err := NewFQCoDel(FQCoDelConfig{Flows: 65536, MemoryLimit: 1 << 40}, nil); err != nil || len(q.flows) != 65536 || q.cfg.MemoryLimit != 1<<31 {
		t.Fatalf("65536 flows and a huge memory_limit: %v", err)
	}
	for _, tc := range []struct {
		cfg  FQCoDelConfig
		want string
	}{
		{FQCoDelConfig{Quantum: 1<<20 + 1}, "quantum"},
		{FQCoDelConfig{Flows: 65537}, "flows"},
		{FQCoDelConfig{Limit: -1}, "limit"},
		{FQCoDelConfig{DropBatch: -1}, "drop_batch"},
		{FQCoDelConfig{MemoryLimit: -1}, "memory_limit"},
		{FQCoDelConfig{Target: -time.Second}, "target"},
		{FQCoDelConfig{InvSqrt: 9}, "invsqrt"},
	} {
		if _, err := NewFQCoDel(tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
	if q, err := Build([]Spec{FQCoDelConfig{Flows: 16}}, &Env{}); err != nil || q.Kind() != "fq_codel" {
		t.Fatalf("build: %v", err)
	}
}
