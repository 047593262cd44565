package qdisc_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// The tests in this file check GranularitySegment's promise: a tree that
// takes a GSO super-packet whole decides exactly as the same tree fed the
// super-packet's segments one by one: the same segments dropped (for the
// same reason, at the same time), marked, duplicated and delivered, at the
// same times and in the same order, with the same counters.

const segMSS = 1448

// segID names a wire segment: its flow (the source port) and its index in
// the flow's byte stream.
type segID struct {
	flow uint16
	n    uint32
}

// segTraffic is a deterministic schedule of super-packets from a few TCP
// flows, some ECN-capable, of 1 to 45 segments each, some with a short
// last segment.
type segArrival struct {
	at   clock.Time
	spec packet.TCP
}

func segTraffic(seed uint64, flows int, dur clock.Time, meanGap clock.Time) []segArrival {
	r := rand.New(rand.NewPCG(seed, 99))
	var out []segArrival
	seq := make([]uint32, flows)
	for t := clock.Time(0); t < dur; t += clock.Time(r.Int64N(int64(2 * meanGap))) {
		f := r.IntN(flows)
		segs := 1 + r.IntN(45)
		payload := segs * segMSS
		if r.IntN(3) == 0 {
			payload -= r.IntN(segMSS - 1)
		}
		tos := uint8(0)
		if f%2 == 1 {
			tos = 2 // ECT(0)
		}
		out = append(out, segArrival{at: t, spec: packet.TCP{
			SrcPort: uint16(40000 + f), DstPort: 5201, Seq: seq[f], Payload: payload, MSS: segMSS, TOS: tos,
			ID: uint16(seq[f] / segMSS),
		}})
		seq[f] += uint32(segs * segMSS) // a gap after a short segment keeps the IDs apart
	}
	return out
}

// segEvent is what happened to one segment.
type segEvent struct {
	at   clock.Time
	what string // "drop:REASON@KIND", "mark:REASON@KIND", "out"
}

// segRecorder is the tree's Observer: it records every segment's events.
type segRecorder struct {
	events map[segID][]segEvent
	marks  map[segID][]string
	order  []segID // deliveries in order
}

func newSegRecorder() *segRecorder {
	return &segRecorder{events: map[segID][]segEvent{}, marks: map[segID][]string{}}
}

// ids returns the segments p holds.
func ids(p *packet.Packet) []segID {
	b := p.Bytes()
	l4 := 20
	if b[0]>>4 == 6 {
		l4 = 40
	}
	flow := binary.BigEndian.Uint16(b[l4:])
	first := binary.BigEndian.Uint32(b[l4+4:]) / segMSS
	out := make([]segID, p.Segments())
	for i := range out {
		out[i] = segID{flow, first + uint32(i)}
	}
	return out
}

func (r *segRecorder) Drop(now clock.Time, p *packet.Packet, from qdisc.Qdisc, why qdisc.Reason) {
	for _, id := range ids(p) {
		r.events[id] = append(r.events[id], segEvent{now, "drop:" + why.String() + "@" + from.Kind()})
	}
	p.Free()
}

func (r *segRecorder) Mark(now clock.Time, p *packet.Packet, from qdisc.Qdisc, why qdisc.Reason) {
	if packet.ECNOf(p.Bytes()) != packet.CE {
		panic("a marked packet without CE")
	}
	for _, id := range ids(p) {
		r.marks[id] = append(r.marks[id], why.String()+"@"+from.Kind())
	}
}

func (r *segRecorder) out(now clock.Time, p *packet.Packet) {
	for _, id := range ids(p) {
		r.events[id] = append(r.events[id], segEvent{now, "out"})
		r.order = append(r.order, id)
	}
	p.Free()
}

// segRun drives a tree built from chain through the traffic: at each
// arrival time it enqueues what arrives, and at every time it releases
// everything due, as the simulator and the router do. With split, every
// super-packet is cut into its segments first (each enqueued on its own,
// one after the other). It returns what happened and the tree's counters
// and lengths along the way.
type segResult struct {
	rec   *segRecorder
	stats []qdisc.Stats
	lens  []string
}

func segRun(t *testing.T, chain []qdisc.Spec, gran qdisc.Granularity, traffic []segArrival, split bool) segResult {
	t.Helper()
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	rec := newSegRecorder()
	env := &qdisc.Env{Observer: rec, Pool: pool, Seed: 42, Granularity: gran}
	root, err := qdisc.Build(chain, env)
	if err != nil {
		t.Fatal(err)
	}
	res := segResult{rec: rec}
	next := clock.Never
	i := 0
	for i < len(traffic) || next != clock.Never {
		now := next
		if i < len(traffic) && traffic[i].at <= now {
			now = traffic[i].at
		}
		for ; i < len(traffic) && traffic[i].at == now; i++ {
			p := pool.Get()
			if err := packet.BuildTCP(p, traffic[i].spec); err != nil {
				t.Fatal(err)
			}
			if !split {
				root.Enqueue(now, p)
				continue
			}
			for p != nil {
				seg := p
				if p.Segs > 1 {
					seg, p, err = pool.Cut(p, 1)
					if err != nil {
						t.Fatal(err)
					}
				} else {
					p = nil
				}
				root.Enqueue(now, seg)
			}
		}
		for {
			p, n := root.Dequeue(now)
			if p == nil {
				next = n
				break
			}
			rec.out(now, p)
		}
		if next <= now {
			t.Fatalf("next %v at %v", next, now)
		}
		res.lens = append(res.lens, fmt.Sprintf("%d: len %d backlog %d", now, root.Len(), root.Backlog()))
	}
	for q := root; q != nil; q = q.Child() {
		res.stats = append(res.stats, q.Stats())
	}
	if pool.Live() != 0 {
		t.Errorf("%d packets still live", pool.Live())
	}
	return res
}

// compareSegRuns fails t where the two runs differ.
func compareSegRuns(t *testing.T, whole, split segResult) {
	t.Helper()
	if !slices.Equal(whole.rec.order, split.rec.order) {
		n := 0
		for n < min(len(whole.rec.order), len(split.rec.order)) && whole.rec.order[n] == split.rec.order[n] {
			n++
		}
		t.Errorf("departure order differs at the %dth departure (of %d and %d)", n, len(whole.rec.order), len(split.rec.order))
	}
	bad := 0
	for id, ev := range split.rec.events {
		if w := whole.rec.events[id]; !slices.Equal(w, ev) && bad < 5 {
			bad++
			t.Errorf("segment %v: whole %v, split %v", id, w, ev)
		}
	}
	if len(whole.rec.events) != len(split.rec.events) {
		t.Errorf("%d segments seen whole, %d split", len(whole.rec.events), len(split.rec.events))
	}
	for id, m := range split.rec.marks {
		w := whole.rec.marks[id]
		slices.Sort(w)
		slices.Sort(m)
		if !slices.Equal(w, m) && bad < 10 {
			bad++
			t.Errorf("segment %v marked: whole %v, split %v", id, w, m)
		}
	}
	if len(whole.rec.marks) != len(split.rec.marks) {
		t.Errorf("%d segments marked whole, %d split", len(whole.rec.marks), len(split.rec.marks))
	}
	if !slices.Equal(whole.stats, split.stats) {
		t.Errorf("counters differ:\nwhole %+v\nsplit %+v", whole.stats, split.stats)
	}
	if !slices.Equal(whole.lens, split.lens) {
		for i := range min(len(whole.lens), len(split.lens)) {
			if whole.lens[i] != split.lens[i] {
				t.Errorf("lengths differ: whole %s, split %s", whole.lens[i], split.lens[i])
				break
			}
		}
	}
}

// TestSegmentsDecideAsSplit runs chains of every kind, alone and in
// trees, that drop, mark, duplicate, delay, reorder and shape, over the
// same traffic whole and split, and checks that every segment fares alike.
func TestSegmentsDecideAsSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("millions of draws: run without -short")
	}
	ms := clock.Time(1e6)
	for _, c := range []struct {
		chain   string
		flows   int
		gap     clock.Time // mean time between super-packets
		dur     clock.Time
		minDrop int // at least this many segments dropped, so the test bites
		minMark int
	}{
		{"netem delay 10ms loss 5%", 3, 300 * clock.Time(1e3), 200 * ms, 100, 0},
		{"netem delay 10ms loss 5% ecn", 4, 300 * clock.Time(1e3), 200 * ms, 100, 100},
		{"netem delay 10ms 2ms", 2, 300 * clock.Time(1e3), 100 * ms, 0, 0},
		{"netem delay 10ms duplicate 3%", 2, 300 * clock.Time(1e3), 100 * ms, 0, 0},
		{"netem delay 5ms reorder 25% 50%", 2, 300 * clock.Time(1e3), 100 * ms, 0, 0},
		{"netem delay 5ms loss 1% duplicate 1% reorder 5% gap 4", 3, 300 * clock.Time(1e3), 100 * ms, 0, 0},
		{"netem limit 60 delay 5ms", 3, 100 * clock.Time(1e3), 100 * ms, 200, 0},
		{"netem delay 1ms rate 100mbit", 2, 1 * ms, 100 * ms, 0, 0},
		{"netem delay 1ms slot 500us 1ms packets 7", 2, 1 * ms, 60 * ms, 0, 0},
		{"netem delay 1ms 100us fifo_jitter", 2, 300 * clock.Time(1e3), 60 * ms, 0, 0},
		{"pfifo limit 50", 3, 100 * clock.Time(1e3), 20 * ms, 0, 0},
		{"tbf rate 50mbit burst 20k limit 100k", 3, 500 * clock.Time(1e3), 150 * ms, 200, 0},
		{"tbf rate 100mbit burst 10k latency 50ms; pfifo limit 80", 3, 500 * clock.Time(1e3), 150 * ms, 100, 0},
		{"tbf rate 100mbit burst 10k latency 50ms; pfifo_head_drop limit 80", 3, 500 * clock.Time(1e3), 150 * ms, 100, 0},
		{"tbf rate 100mbit burst 10k latency 50ms; pfifo_fast", 3, 500 * clock.Time(1e3), 150 * ms, 0, 0},
		{"tbf rate 50mbit burst 10k limit 1m; codel target 1ms interval 10ms", 3, 500 * clock.Time(1e3), 300 * ms, 50, 0},
		{"tbf rate 50mbit burst 10k limit 1m; codel target 1ms interval 10ms ecn", 4, 500 * clock.Time(1e3), 300 * ms, 20, 20},
		{"tbf rate 50mbit burst 10k limit 1m; codel target 1ms interval 10ms ce_threshold 2ms", 4, 500 * clock.Time(1e3), 300 * ms, 10, 100},
		{"tbf rate 80mbit burst 10k latency 50ms; fq_codel target 1ms interval 10ms", 4, 300 * clock.Time(1e3), 300 * ms, 50, 0},
		{"tbf rate 80mbit burst 10k latency 50ms; fq_codel target 1ms interval 10ms ecn", 4, 300 * clock.Time(1e3), 300 * ms, 20, 20},
		{"tbf rate 80mbit burst 10k latency 50ms; fq_codel limit 300 memory_limit 400k", 4, 300 * clock.Time(1e3), 200 * ms, 100, 0},
		{"tbf rate 50mbit burst 10k latency 50ms; pie target 2ms tupdate 5ms", 3, 300 * clock.Time(1e3), 400 * ms, 50, 0},
		{"tbf rate 120mbit burst 10k latency 50ms; pie target 2ms tupdate 5ms ecn", 4, 2 * ms, 1000 * ms, 10, 10},
		{"tbf rate 120mbit burst 10k latency 50ms; fq_pie target 2ms tupdate 5ms ecn ecn_prob 50", 4, 2 * ms, 1000 * ms, 10, 10},
		{"tbf rate 80mbit burst 10k latency 50ms; fq_pie limit 300", 4, 300 * clock.Time(1e3), 100 * ms, 100, 0},
		{"tbf rate 200mbit burst 20k latency 50ms; tbf rate 50mbit burst 10k limit 300k", 3, 300 * clock.Time(1e3), 200 * ms, 50, 0},
		{"tbf rate 50mbit burst 10k latency 50ms; dualpi2 target 2ms tupdate 5ms any_ect", 4, 300 * clock.Time(1e3), 150 * ms, 20, 20},
		{"netem delay 5ms; fq_codel", 3, 300 * clock.Time(1e3), 100 * ms, 0, 0},
		{"tbf rate 80mbit burst 10k latency 50ms; fq_codel target 1ms interval 10ms", 1, 300 * clock.Time(1e3), 300 * ms, 20, 0},
		{"tbf rate 200mbit burst 10k latency 50ms; fq_codel target 1ms interval 10ms", 1, 3 * ms, 300 * ms, 0, 0},
		{"tbf rate 50mbit burst 10k limit 1m; codel target 5ms interval 20ms", 1, 3 * ms, 300 * ms, 0, 0},
		{"netem delay 2ms loss 1%; tbf rate 60mbit burst 15k latency 50ms; fq_codel target 1ms interval 10ms ecn", 4, 300 * clock.Time(1e3), 300 * ms, 20, 20},
		{"netem delay 10ms limit 100000; tbf rate 20gbit burst 4mb latency 50ms; fq_codel", 3, 50 * clock.Time(1e3), 50 * ms, 0, 0},
		{"tbf rate 80mbit burst 10k latency 50ms; sfq limit 100 depth 20", 4, 2 * ms, 300 * ms, 50, 0},
		{"tbf rate 80mbit burst 10k latency 50ms; sfq perturb 1 headdrop redflowlimit 60000 min 10000 max 40000 probability 0.2 ecn", 4, 2 * ms, 1100 * ms, 20, 20},
	} {
		t.Run(c.chain, func(t *testing.T) {
			chain, err := tcspec.ParseChain(c.chain, tcspec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			traffic := segTraffic(uint64(len(c.chain)), c.flows, c.dur, c.gap)
			whole := segRun(t, chain, qdisc.GranularitySegment, traffic, false)
			split := segRun(t, chain, qdisc.GranularitySegment, traffic, true)
			compareSegRuns(t, whole, split)
			drops, marks := 0, len(split.rec.marks)
			for _, ev := range split.rec.events {
				for _, e := range ev {
					if e.what != "out" {
						drops++
					}
				}
			}
			if drops < c.minDrop || marks < c.minMark {
				t.Errorf("%d segments dropped, %d marked: want at least %d and %d for the test to bite", drops, marks, c.minDrop, c.minMark)
			}
			t.Logf("%d segments, %d dropped, %d marked, %d departures", len(split.rec.events), drops, marks, len(split.rec.order))
		})
	}
}

// BenchmarkSuperPacket measures the per-segment decisions on whole
// super-packets of 45 segments (64 KiB) arriving every 50 µs (10 Gbit/s):
// ns and allocations per super-packet, enqueue and dequeue.
func BenchmarkSuperPacket(b *testing.B) {
	for _, chain := range []string{
		"netem delay 10ms limit 100000",
		"netem delay 10ms loss 0.01% limit 100000",
		"netem delay 10ms limit 100000; tbf rate 20gbit burst 4mb latency 50ms; fq_codel",
	} {
		b.Run(chain, func(b *testing.B) {
			specs, err := tcspec.ParseChain(chain, tcspec.Options{})
			if err != nil {
				b.Fatal(err)
			}
			pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
			q, err := qdisc.Build(specs, &qdisc.Env{Pool: pool, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			// Each super-packet is the template's headers (the sequence
			// number moved on) in front of whatever payload the pool's
			// buffer holds: building the payload is not what is measured.
			spec := packet.TCP{SrcPort: 1, DstPort: 2, Payload: 45 * segMSS, MSS: segMSS}
			tmpl := pool.Get()
			if err := packet.BuildTCP(tmpl, spec); err != nil {
				b.Fatal(err)
			}
			tb, toff := tmpl.Buffer()
			hdr := tb[toff-packet.VirtioNetHdrLen : toff+spec.TCPHeaderLen()]
			step := func(i int) {
				now := clock.Time(i) * 50_000
				p := pool.Get()
				buf, off := p.Buffer()
				copy(buf[off-packet.VirtioNetHdrLen:], hdr)
				binary.BigEndian.PutUint32(buf[off+24:], uint32(i*spec.Payload))
				p.SetLen(tmpl.Len())
				p.VNet, p.SegSize, p.SegHdr = true, tmpl.SegSize, tmpl.SegHdr
				if err := packet.DescribeGSO(p); err != nil {
					b.Fatal(err)
				}
				q.Enqueue(now, p)
				for {
					p, _ := q.Dequeue(now)
					if p == nil {
						break
					}
					p.Free()
				}
			}
			// Fill the delay line, and the pool, first.
			i := 0
			for ; i < 1000; i++ {
				step(i)
			}
			b.ReportAllocs()
			for b.Loop() {
				step(i)
				i++
			}
		})
	}
}

// sportFilter is "match ip sport PORT 0xffff flowid CLASS".
func sportFilter(t *testing.T, port uint16, class qdisc.ClassID) qdisc.Filter {
	t.Helper()
	f := qdisc.Filter{Prio: 1, Protocol: qdisc.ProtocolIP, ClassID: class}
	if err := f.MatchField("ip", "sport", uint32(port), 0xffff); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSegmentsDecideAsSplitClassful is TestSegmentsDecideAsSplit for
// htb and prio trees, whose leaves drop, mark and shape on their own.
func TestSegmentsDecideAsSplitClassful(t *testing.T) {
	if testing.Short() {
		t.Skip("millions of draws: run without -short")
	}
	ms := clock.Time(1e6)
	parse := func(s string) []qdisc.Spec {
		specs, err := tcspec.ParseChain(s, tcspec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return specs
	}
	cls := func(minor uint16) qdisc.ClassID { return qdisc.MakeClassID(1, minor) }
	htb := qdisc.HTBConfig{Handle: 1, Default: 0x20, DirectQLen: 40,
		Classes: []qdisc.HTBClass{
			{ID: cls(1), Rate: 50e6 / 8},
			{ID: cls(0x10), Parent: cls(1), Rate: 20e6 / 8, Ceil: 50e6 / 8, Burst: 20000, Leaf: parse("pfifo limit 60")},
			{ID: cls(0x20), Parent: cls(1), Rate: 20e6 / 8, Ceil: 40e6 / 8, Quantum: 3000, Leaf: parse("codel target 1ms interval 10ms ecn")},
			{ID: cls(0x30), Parent: cls(1), Rate: 5e6 / 8, Ceil: 50e6 / 8, Prio: 1, Leaf: parse("fq_codel target 1ms interval 10ms")},
		},
		Filters: []qdisc.Filter{sportFilter(t, 40000, cls(0x10)), sportFilter(t, 40002, cls(0x30)), sportFilter(t, 40003, cls(0))},
	}
	prio := qdisc.PrioConfig{Handle: 1,
		Leaves:  [][]qdisc.Spec{parse("tbf rate 20mbit burst 10k limit 60k"), parse("pfifo limit 40")},
		Filters: []qdisc.Filter{sportFilter(t, 40001, cls(1))},
	}
	for _, c := range []struct {
		name    string
		chain   []qdisc.Spec
		flows   int
		minDrop int
		minMark int
	}{
		{"htb", []qdisc.Spec{htb}, 4, 100, 20},
		{"netem; htb", append(parse("netem delay 2ms loss 1%"), htb), 4, 100, 0},
		{"tbf; prio", append(parse("tbf rate 60mbit burst 15k latency 50ms"), prio), 3, 100, 0},
		{"htb over prio", []qdisc.Spec{qdisc.HTBConfig{Handle: 2, Default: 1, Classes: []qdisc.HTBClass{{ID: qdisc.MakeClassID(2, 1), Rate: 60e6 / 8, Leaf: []qdisc.Spec{prio}}}}}, 3, 100, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			traffic := segTraffic(uint64(len(c.name)), c.flows, 200*ms, 300*clock.Time(1e3))
			whole := segRun(t, c.chain, qdisc.GranularitySegment, traffic, false)
			split := segRun(t, c.chain, qdisc.GranularitySegment, traffic, true)
			compareSegRuns(t, whole, split)
			drops := 0
			for _, ev := range split.rec.events {
				for _, e := range ev {
					if e.what != "out" {
						drops++
					}
				}
			}
			if drops < c.minDrop || len(split.rec.marks) < c.minMark {
				t.Errorf("%d segments dropped, %d marked: want at least %d and %d for the test to bite", drops, len(split.rec.marks), c.minDrop, c.minMark)
			}
			t.Logf("%d segments, %d dropped, %d marked, %d departures", len(split.rec.events), drops, len(split.rec.marks), len(split.rec.order))
		})
	}
}
