package qdisc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

func newTestSFQ(t testing.TB, cfg SFQConfig, env *Env) *SFQ {
	t.Helper()
	q, err := NewSFQ(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// sfqPorts returns n UDP source ports whose flows land in n different
// buckets of q under its current key, so that a test's flows do not share
// a slot (the hash is keyed from the seed; a collision is the hash's
// business, not the test's).
func sfqPorts(q *SFQ, pool *packet.Pool, n int) []uint16 {
	var ports []uint16
	used := map[uint32]bool{}
	for port := uint16(1000); len(ports) < n; port++ {
		p := coretest.UDP(pool, 100, port, 0, 0)
		b := q.bucket(p)
		p.Free()
		if !used[b] {
			used[b] = true
			ports = append(ports, port)
		}
	}
	return ports
}

// The defaults are sfq_init's (limit 127, quantum psched_mtu, depth 127,
// flows 128, divisor 1024), and sfq_change's clamping: flows to the
// divisor and to a given limit, a given limit to depth·flows; a limit
// left out is not clamped.
func TestSFQDefaults(t *testing.T) {
	for _, c := range []struct {
		cfg  SFQConfig
		env  Env
		want SFQDump
	}{
		{SFQConfig{}, Env{}, SFQDump{Limit: 127, Quantum: 1514, Depth: 127, Flows: 128, Divisor: 1024}},
		{SFQConfig{}, Env{Framing: FramingIP, MTU: 9000}, SFQDump{Limit: 127, Quantum: 9000, Depth: 127, Flows: 128, Divisor: 1024}},
		{SFQConfig{Limit: 100, Perturb: 10}, Env{}, SFQDump{Limit: 100, Quantum: 1514, Depth: 127, Flows: 100, Divisor: 1024, Perturb: 10}},
		{SFQConfig{Limit: 3000, Depth: 64, Flows: 512}, Env{}, SFQDump{Limit: 3000, Quantum: 1514, Depth: 64, Flows: 512, Divisor: 1024}},
		{SFQConfig{Limit: 5000, Depth: 10, Flows: 8}, Env{}, SFQDump{Limit: 80, Quantum: 1514, Depth: 10, Flows: 8, Divisor: 1024}},
		{SFQConfig{Depth: 10, Flows: 8}, Env{}, SFQDump{Limit: 127, Quantum: 1514, Depth: 10, Flows: 8, Divisor: 1024}},
		{SFQConfig{Divisor: 64, Depth: 500, Flows: 100000}, Env{}, SFQDump{Limit: 127, Quantum: 1514, Depth: 127, Flows: 64, Divisor: 64}},
		{SFQConfig{Flows: 100000, Divisor: 65536}, Env{}, SFQDump{Limit: 127, Quantum: 1514, Depth: 127, Flows: 65408, Divisor: 65536}},
	} {
		got, err := c.cfg.Dump(&c.env)
		if err != nil || got != c.want {
			t.Errorf("%+v: %+v, %v; want %+v", c.cfg, got, err, c.want)
		}
	}
	q := newTestSFQ(t, SFQConfig{}, &Env{})
	if q.p.scaledQ != 190 { // DIV_ROUND_UP(1514, 8)
		t.Errorf("scaled quantum %d, want 190", q.p.scaledQ)
	}
	if q.dep[0].next != 127 {
		t.Errorf("the first free slot is %d, want 127 (sfq_init links the slots in order, each at the head)", q.dep[0].next)
	}
}

// The RED mode's values are tc's: the captured case "redflowlimit 100000
// min 8000 max 60000 probability 0.2" shows ewma 6 (burst (2·8000 +
// 60000)/3000 = 25 packets of avpkt 1000), and thresholds left out follow
// Sally Floyd's recommendations.
func TestSFQREDParams(t *testing.T) {
	d, err := SFQConfig{RedFlowLimit: 100000, Min: 8000, Max: 60000, Probability: 0.2, ECN: true}.Dump(&Env{})
	if err != nil || !d.RED || d.Wlog != 6 || d.Min != 8000 || d.Max != 60000 || d.MaxP != 858993459 || !d.ECN {
		t.Errorf("%+v, %v", d, err)
	}
	c := SFQConfig{RedFlowLimit: 120000}.WithDefaults()
	if c.Max != 30000 || c.Min != 10000 || c.Avpkt != 1000 || c.Burst != 16 || c.Probability != 0.02 {
		t.Errorf("defaults %+v", c)
	}
}

// What tc or the kernel refuses is refused, naming the limit.
func TestSFQRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg  SFQConfig
		want string
	}{
		{SFQConfig{Divisor: 1000}, "not a power of two"},
		{SFQConfig{Divisor: 131072}, "not a power of two up to 65536"},
		{SFQConfig{Quantum: 262137}, "exceeds 262136 bytes"},
		{SFQConfig{Limit: 1}, "limit 1"},
		{SFQConfig{Limit: 2, Depth: 1, Flows: 1}, "leaves a limit of 1 packet"},
		{SFQConfig{Perturb: -1}, "perturb -1 out of range"},
		{SFQConfig{Perturb: 8589935}, "0 (never) to 8589934 seconds"},
		{SFQConfig{Min: 8000}, "need redflowlimit"},
		{SFQConfig{RedFlowLimit: 50000, Max: 60000}, "max 60000 is larger than redflowlimit 50000"},
		{SFQConfig{RedFlowLimit: 100000, Min: 60000, Max: 60000}, "min 60000 is not smaller than max 60000"},
		{SFQConfig{RedFlowLimit: 100000, Burst: 1}, "give burst 9 or more"},
	} {
		if _, err := NewSFQ(c.cfg, &Env{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// sfqRecv dequeues everything q holds at now and returns the source ports
// in order.
func sfqRecv(q *SFQ, now clock.Time) (ports []uint16, seqs []int64) {
	for {
		p, _ := q.Dequeue(now)
		if p == nil {
			return ports, seqs
		}
		ports = append(ports, srcPort(p))
		seqs = append(seqs, p.Seq)
		p.Free()
	}
}

// Two flows, one with eight times the packets of the other, share the
// dequeue 1:1 in packets of equal size. With 1514-byte frames a turn is
// one packet (allot 190 eighths less 190 is 0), so the flows alternate
// strictly; with 1014-byte frames (127 eighths) a flow sends 2, 1, 2, 1
// ... packets a turn (190 → 63 → -64; -64 + 190 = 126 → -1; -1 + 190 =
// 189 → 62 → -65; ...), each flow the same, so in every six packets
// each sends three.
func TestSFQSharesOneToOne(t *testing.T) {
	for _, c := range []struct {
		ip   int // IP length; the Ethernet frame is 14 bytes more
		want string
	}{
		{1500, "ABABABABABABABABAB"},
		{1000, "AABBABAABBABAABBAB"},
	} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		q := newTestSFQ(t, SFQConfig{}, &Env{})
		ports := sfqPorts(q, pool, 2)
		for i := range 80 {
			q.Enqueue(0, coretest.UDP(pool, c.ip, ports[0], 0, int64(i)))
			if i%8 == 0 {
				q.Enqueue(0, coretest.UDP(pool, c.ip, ports[1], 0, int64(i)))
			}
		}
		var got strings.Builder
		for range len(c.want) {
			p, _ := q.Dequeue(0)
			if srcPort(p) == ports[0] {
				got.WriteByte('A')
			} else {
				got.WriteByte('B')
			}
			p.Free()
		}
		if got.String() != c.want {
			t.Errorf("%d-byte packets: dequeued %s, want %s", c.ip, got.String(), c.want)
		}
		rest, _ := sfqRecv(q, 0)
		if len(rest) != 90-len(c.want) {
			t.Errorf("%d left, want %d", len(rest), 90-len(c.want))
		}
		coretest.CheckLive(t, pool, 0)
	}
}

// A flow holds at most depth packets: past it the arriving packet is
// dropped, or with headdrop the flow's oldest.
func TestSFQDepth(t *testing.T) {
	for _, headdrop := range []bool{false, true} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestSFQ(t, SFQConfig{Depth: 5, HeadDrop: headdrop}, &Env{Observer: rec})
		var verdicts []Verdict
		for i := range 8 {
			verdicts = append(verdicts, q.Enqueue(0, coretest.UDP(pool, 1000, 7, 0, int64(i))))
		}
		_, seqs := sfqRecv(q, 0)
		wantSeqs, wantV, why := []int64{0, 1, 2, 3, 4}, Dropped, ReasonLimit
		if headdrop {
			wantSeqs, wantV, why = []int64{3, 4, 5, 6, 7}, Congested, ReasonHeadDrop
		}
		if !slices.Equal(seqs, wantSeqs) || verdicts[7] != wantV || rec.count(why) != 3 || q.Stats().Drops != 3 {
			t.Errorf("headdrop %v: delivered %v, verdict %v, drops %+v; want %v, %v, 3 %v", headdrop, seqs, verdicts[7], rec.drops, wantSeqs, wantV, why)
		}
		coretest.CheckLive(t, pool, 0)
	}
}

// Past the limit the longest flow loses its last packet (its first with
// headdrop); of flows of equal length, the one that reached it last.
func TestSFQOverflowDropsFromLongest(t *testing.T) {
	for _, headdrop := range []bool{false, true} {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestSFQ(t, SFQConfig{Limit: 10, HeadDrop: headdrop}, &Env{Observer: rec})
		ports := sfqPorts(q, pool, 3)
		a, b, c := ports[0], ports[1], ports[2]
		for i := range 6 {
			q.Enqueue(0, coretest.UDP(pool, 1000, a, 0, int64(i)))
		}
		for i := range 4 {
			q.Enqueue(0, coretest.UDP(pool, 1000, b, 0, 100+int64(i)))
		}
		// The eleventh packet, b's: a (6) loses one, b's arrival stands.
		if v := q.Enqueue(0, coretest.UDP(pool, 1000, b, 0, 104)); v != Queued {
			t.Errorf("headdrop %v: b's packet %v, want Queued", headdrop, v)
		}
		// Now a and b hold 5; a reached 5 last (by the drop), so c's
		// arrival costs a another.
		if v := q.Enqueue(0, coretest.UDP(pool, 1000, c, 0, 200)); v != Queued {
			t.Errorf("headdrop %v: c's packet %v, want Queued", headdrop, v)
		}
		want := []seen{{0, "sfq", ReasonOverflow, a, 5}, {0, "sfq", ReasonOverflow, a, 4}}
		if headdrop {
			want = []seen{{0, "sfq", ReasonOverflow, a, 0}, {0, "sfq", ReasonOverflow, a, 1}}
		}
		if !slices.Equal(rec.drops, want) || q.Len() != 10 {
			t.Errorf("headdrop %v: drops %+v, len %d; want %+v, 10", headdrop, rec.drops, q.Len(), want)
		}
		// a's own arrival at the longest flow: without headdrop it is
		// the packet dropped.
		wantV := Dropped
		if headdrop {
			wantV = Congested
		}
		if v := q.Enqueue(0, coretest.UDP(pool, 1000, a, 0, 6)); v != wantV {
			t.Errorf("headdrop %v: a's packet %v, want %v", headdrop, v, wantV)
		}
		sfqRecv(q, 0)
		coretest.CheckLive(t, pool, 0)
	}
}

// Every perturb seconds the hash takes a new key: the flows move to other
// buckets, and every packet held stays, in its flow's order.
func TestSFQPerturbRehashes(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestSFQ(t, SFQConfig{Perturb: 1}, &Env{Observer: rec})
	const flows, each = 8, 3
	ports := sfqPorts(q, pool, flows)
	for i := range each {
		for _, port := range ports {
			q.Enqueue(0, coretest.UDP(pool, 1000, port, 0, int64(i)))
		}
	}
	buckets := func() []uint32 {
		var bs []uint32
		for _, port := range ports {
			p := coretest.UDP(pool, 1000, port, 0, 0)
			bs = append(bs, q.bucket(p))
			p.Free()
		}
		return bs
	}
	before, key := buckets(), q.key
	q.Peek(999 * ms)
	if q.key != key {
		t.Fatal("the key changed before the period")
	}
	// The peeked packet (ports[0]'s first) is outside the slots; the
	// arrival at 1s first re-keys and re-sorts the rest.
	q.Enqueue(clock.Time(time.Second), coretest.UDP(pool, 1000, ports[0], 0, each))
	after := buckets()
	if q.key == key || slices.Equal(before, after) {
		t.Fatalf("no new key at 1s: buckets %v, then %v", before, after)
	}
	for i, port := range ports {
		x := q.ht[after[i]]
		if x == sfqEmpty || srcPort(q.slots[x].q.Front()) != port {
			t.Errorf("flow %d is not in its new bucket %d", port, after[i])
		}
	}
	if q.Len() != flows*each+1 || len(rec.drops) != 0 {
		t.Errorf("len %d, drops %v; want %d, none", q.Len(), rec.drops, flows*each+1)
	}
	got := map[uint16][]int64{}
	for {
		p, _ := q.Dequeue(clock.Time(time.Second))
		if p == nil {
			break
		}
		got[srcPort(p)] = append(got[srcPort(p)], p.Seq)
		p.Free()
	}
	for i, port := range ports {
		want := []int64{0, 1, 2}
		if i == 0 {
			want = append(want, each)
		}
		if !slices.Equal(got[port], want) {
			t.Errorf("flow %d: %v, want %v", port, got[port], want)
		}
	}
	coretest.CheckLive(t, pool, 0)
}

// With the flow's backlog, and so its average, held at the middle of min
// 8000 and max 60000 bytes, probability 0.2 gives pb = 0.1: red.h's count
// rule then spaces the marks uniformly 1 to 10 packets apart, 5.5 on
// average, so 1/5.5 of the arrivals are marked (ecn, ECN-capable) or
// dropped (not ECN-capable). Above max every arrival is a forced drop, or
// with ecn a forced mark (of the flow's head with headdrop), unless
// harddrop.
func TestSFQRED(t *testing.T) {
	base := SFQConfig{RedFlowLimit: 100000, Min: 8000, Max: 60000, Probability: 0.2}
	steady := func(t *testing.T, cfg SFQConfig, tos uint8, backlog int, n int) (*SFQ, *recorder) {
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		rec := &recorder{}
		q := newTestSFQ(t, cfg, &Env{Observer: rec})
		hold := backlog / 1000
		probe := coretest.UDP(pool, 986, 7, tos, 0)
		b := q.bucket(probe)
		probe.Free()
		for i := range hold {
			q.Enqueue(0, coretest.UDP(pool, 986, 7, tos, int64(i)))
			q.slots[q.ht[b]].vars.qavg = 0 // no RED while the backlog builds
		}
		// The average starts where the backlog stays.
		q.slots[q.ht[b]].vars.qavg = uint64(backlog) << q.redP.wlog
		q.stats, q.x = Stats{}, SFQStats{}
		for i := range n {
			q.Enqueue(0, coretest.UDP(pool, 986, 7, tos, int64(hold+i)))
			if q.Len() > hold {
				p, _ := q.Dequeue(0)
				p.Free()
			}
		}
		sfqRecv(q, 0)
		coretest.CheckLive(t, pool, 0)
		return q, rec
	}
	const n = 20000
	t.Run("between", func(t *testing.T) {
		for _, c := range []struct {
			ecn  bool
			tos  uint8
			mark bool
		}{{false, 2, false}, {true, 2, true}, {true, 0, false}} {
			cfg := base
			cfg.ECN = c.ecn
			q, rec := steady(t, cfg, c.tos, 34000, n)
			x := q.XStats()
			got := x.ProbDrop
			if c.mark {
				got = x.ProbMark
			}
			if want := float64(n) / 5.5; float64(got) < want*0.97 || float64(got) > want*1.03 {
				t.Errorf("ecn %v tos %#x: %+v, want about %.0f", c.ecn, c.tos, x, want)
			}
			if c.mark != (len(rec.marks) > 0) || q.Stats().Overlimits != x.ProbDrop+x.ProbMark {
				t.Errorf("ecn %v tos %#x: marks %d, overlimits %d", c.ecn, c.tos, len(rec.marks), q.Stats().Overlimits)
			}
		}
	})
	t.Run("above max", func(t *testing.T) {
		for _, c := range []struct {
			name               string
			ecn, hard, head    bool
			drop, mark, markHd uint64
		}{
			{"drop", false, false, false, 100, 0, 0},
			{"ecn", true, false, false, 0, 100, 0},
			{"ecn harddrop", true, true, false, 100, 0, 0},
			{"ecn headdrop", true, false, true, 0, 0, 100},
		} {
			cfg := base
			cfg.ECN, cfg.HardDrop, cfg.HeadDrop = c.ecn, c.hard, c.head
			q, _ := steady(t, cfg, 2, 70000, 100)
			x := q.XStats()
			if x.ForcedDrop != c.drop || x.ForcedMark != c.mark || x.ForcedMarkHead != c.markHd || x.ProbDrop+x.ProbMark+x.ProbMarkHead != 0 {
				t.Errorf("%s: %+v", c.name, x)
			}
		}
	})
}

// Under tbf the packet sfq's round robin chose waits, decided, for the
// tokens (tbf peeks first); everything arrives and nothing leaks.
func TestSFQUnderTBF(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	env := &Env{Observer: rec, Pool: pool}
	root, err := Build([]Spec{TBFConfig{Rate: 1_250_000, Burst: 3028, Limit: 10000}, SFQConfig{}}, env)
	if err != nil {
		t.Fatal(err)
	}
	q := root.Child().(*SFQ)
	ports := sfqPorts(q, pool, 2)
	for i := range 20 {
		root.Enqueue(0, coretest.UDP(pool, 1500, ports[i%2], 0, int64(i)))
	}
	var got []int64
	now := clock.Time(0)
	for root.Len() > 0 {
		p, next := root.Dequeue(now)
		if p == nil {
			now = next
			continue
		}
		got = append(got, p.Seq)
		p.Free()
	}
	// 10 Mbit/s: a 1514-byte frame every 1.2112 ms after the two the
	// bucket holds; the flows alternate as they arrived.
	if len(got) != 20 || !slices.Equal(got[:4], []int64{0, 1, 2, 3}) || now != clock.Time(18*1211200) {
		t.Errorf("delivered %v, the last at %v", got, now)
	}
	coretest.CheckLive(t, pool, 0)
}

// The kernel's sfq has no change operation: the same configuration is
// accepted (nothing changes), another refused. Flush empties it.
func TestSFQChangeAndFlush(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestSFQ(t, SFQConfig{Limit: 50}, &Env{Observer: rec})
	for i := range 10 {
		q.Enqueue(0, coretest.UDP(pool, 1000, uint16(i%3), 0, int64(i)))
	}
	if err := q.Change(0, SFQConfig{Limit: 50}); err != nil {
		t.Errorf("same configuration: %v", err)
	}
	if err := q.Change(0, SFQConfig{Limit: 60}); err == nil || !strings.Contains(err.Error(), "no change operation") {
		t.Errorf("new limit: %v", err)
	}
	q.Peek(0)
	q.Flush(0)
	if q.Len() != 0 || q.Backlog() != 0 || rec.count(ReasonFlushed) != 10 || q.tail != -1 || q.curDepth != 0 {
		t.Errorf("after flush: len %d backlog %d flushed %d", q.Len(), q.Backlog(), rec.count(ReasonFlushed))
	}
	coretest.CheckLive(t, pool, 0)
}

func BenchmarkSFQ(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestSFQ(b, SFQConfig{}, &Env{})
	ps := make([]*packet.Packet, 48)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, uint16(1000+i%8), 0x02, int64(i))
	}
	benchSteady(b, q, ps, 40)
}
