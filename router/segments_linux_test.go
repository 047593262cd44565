package router

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/roottest"
	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tun"
)

// fakeRouterGranular is fakeRouter with the given granularity.
func fakeRouterGranular(t testing.TB, upChain []qdisc.Spec, pkts [][]byte, g qdisc.Granularity) (*Router, *fakeVNet, *fakeVNet) {
	t.Helper()
	return fakeRouterWith(t, Config{Up: link.Config{Chain: upChain}, Granularity: g}, pkts)
}

// vnetPacket returns the virtio-net header and packet BuildTCP makes of s,
// as a fake device hands it out.
func vnetPacket(t testing.TB, s packet.TCP) []byte {
	t.Helper()
	p := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom).Get()
	if err := packet.BuildTCP(p, s); err != nil {
		t.Fatal(err)
	}
	buf, off := p.Buffer()
	return append([]byte(nil), buf[off-tun.VNetHdrLen:off+p.Len()]...)
}

// segKey names a wire segment: its flow (source port) and the sequence
// number of its first payload byte.
type segKey struct {
	port uint16
	seq  uint32
}

// segKeys returns the segments the IP packet b stands for when cut into
// segments of mss payload bytes.
func segKeys(b []byte, mss int) []segKey {
	l4 := 20
	if b[0]>>4 == 6 {
		l4 = 40
	}
	hl := l4 + int(b[l4+12]>>4)*4
	port := binary.BigEndian.Uint16(b[l4:])
	seq := binary.BigEndian.Uint32(b[l4+4:])
	var out []segKey
	for off := 0; off < len(b)-hl; off += mss {
		out = append(out, segKey{port, seq + uint32(off)})
	}
	return out
}

// segEvents records, per segment, what a direction did to it: "drop:REASON"
// and "mark:REASON" events from its hook, in order.
type segEvents map[segKey][]string

func (e segEvents) Event(ev *link.Event) {
	if ev.Kind != link.Drop && ev.Kind != link.Mark {
		return
	}
	for _, k := range segKeys(ev.Packet.Bytes(), segMSS) {
		e[k] = append(e[k], ev.Kind.String()+":"+ev.Reason.String())
	}
}

const segMSS = 1448

// lossyTraffic is n super-packets of 1 to 45 segments each from two TCP
// flows, one ECN-capable.
func lossyTraffic(t testing.TB, n int) [][]byte {
	r := rand.New(rand.NewPCG(11, 11))
	var pkts [][]byte
	seq := [2]uint32{1000, 1 << 31}
	for i := range n {
		f := i % 2
		segs := 1 + r.IntN(45)
		payload := segs*segMSS - r.IntN(segMSS/2)
		pkts = append(pkts, vnetPacket(t, packet.TCP{SrcPort: uint16(40000 + f), DstPort: 5201, Seq: seq[f],
			Payload: payload, MSS: segMSS, TOS: uint8(2 * f), ID: uint16(i * 50), Fill: byte(i)}))
		seq[f] += uint32(segs * segMSS)
	}
	return pkts
}

// runLossy runs pkts through a router whose up direction has chain (and
// the given pcap), stepping its loop until every segment has been
// delivered or dropped, and returns the hook's events, the segments the
// server got and the router's snapshot.
func runLossy(t *testing.T, chain string, pkts [][]byte, pcap *bytes.Buffer) (segEvents, []segKey, DirSnapshot) {
	t.Helper()
	ev := segEvents{}
	c := &fakeVNet{pkts: pkts, perRead: readBatch, budget: len(pkts)}
	s := &fakeVNet{perRead: readBatch, keep: true}
	cfg := Config{
		Up:     link.Config{Chain: mustChain(t, chain), Env: qdisc.Env{Seed: link.DirectionSeed(1, "up")}, Hook: ev},
		Client: c,
		Server: s,
	}
	if pcap != nil {
		cfg.Pcap = pcap
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.up.close(); r.down.close() }()
	total := 0
	for _, p := range pkts {
		total += len(segKeys(p[tun.VNetHdrLen:], segMSS))
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		step(r.up)
		c := r.up.snapshot().Counters
		if c.Sent == uint64(total) && c.Queued == 0 {
			break
		}
	}
	var got []segKey
	for _, b := range s.got {
		got = append(got, segKeys(b, segMSS)...)
	}
	if r.pcap != nil {
		r.pcap.flush()
	}
	return ev, got, r.up.snapshot()
}

// linkFates runs the segments of pkts one by one (cut from each
// super-packet in turn, as a link carrying them would see them) through a
// link.Direction of chain seeded as the router's up direction, and returns
// its events and the segments it delivered.
func linkFates(t *testing.T, chain string, pkts [][]byte) (segEvents, []segKey) {
	t.Helper()
	ev := segEvents{}
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	d, err := link.New(link.Config{Name: "up", Chain: mustChain(t, chain), Env: qdisc.Env{Seed: link.DirectionSeed(1, "up"), Pool: pool}, Hook: ev})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range pkts {
		p := pool.Get()
		buf, off := p.Buffer()
		copy(buf[off-tun.VNetHdrLen:], b)
		p.SetLen(len(b) - tun.VNetHdrLen)
		p.VNet = true
		if err := packet.DescribeGSO(p); err != nil {
			t.Fatal(err)
		}
		p.SegHdr = 52
		for p != nil {
			seg := p
			if p.Segs > 1 {
				if seg, p, err = pool.Cut(p, 1); err != nil {
					t.Fatal(err)
				}
			} else {
				p = nil
			}
			d.Enqueue(clock.Time(i), seg)
		}
	}
	var got []segKey
	for {
		p, _ := d.Dequeue(clock.Time(1e12))
		if p == nil {
			break
		}
		got = append(got, segKeys(p.Bytes(), segMSS)...)
		p.Free()
	}
	return ev, got
}

// TestFatesAsLink checks that the router, which takes super-packets whole,
// drops, marks and duplicates exactly the segments that the same seeded
// chain in a link.Direction (the simulator's core, seeded as the lab seeds
// its directions) drops, marks and duplicates when it sees the segments
// one by one.
func TestFatesAsLink(t *testing.T) {
	pkts := lossyTraffic(t, 120)
	for _, chain := range []string{
		"netem limit 100000 delay 5ms loss 3%",
		"netem limit 100000 delay 5ms loss 3% ecn",
		"netem limit 100000 delay 5ms loss 2% duplicate 2%",
		"netem limit 300 delay 500ms", // nothing leaves before all arrived
	} {
		t.Run(chain, func(t *testing.T) {
			rev, rgot, snap := runLossy(t, chain, pkts, nil)
			lev, lgot := linkFates(t, chain, pkts)
			if len(rev) == 0 {
				t.Fatal("the chain dropped and marked nothing: the test does not bite")
			}
			for k, e := range lev {
				if !slices.Equal(rev[k], e) {
					t.Errorf("segment %v: router %v, link %v", k, rev[k], e)
				}
			}
			for k, e := range rev {
				if _, ok := lev[k]; !ok {
					t.Errorf("segment %v: router %v, link nothing", k, e)
				}
			}
			cmp := func(a, b segKey) int {
				if a.port != b.port {
					return int(a.port) - int(b.port)
				}
				return int(int64(a.seq) - int64(b.seq))
			}
			slices.SortFunc(rgot, cmp)
			slices.SortFunc(lgot, cmp)
			if !slices.Equal(rgot, lgot) {
				t.Errorf("the server got %d segments, the link delivered %d", len(rgot), len(lgot))
			}
			c := snap.Counters
			t.Logf("%d segments delivered, %d dropped, %d marked, %d duplicated; %d GRO writes of %d packets",
				c.Delivered, c.Dropped, c.Marked, c.Duplicated, snap.GSO.GROWrites, snap.GSO.GROPackets)
			if c.Sent+c.Duplicated != c.Delivered+c.Dropped || uint64(len(rgot)) != c.Delivered {
				t.Errorf("counters %+v do not balance, or %d segments reached the server", c, len(rgot))
			}
		})
	}
}

// TestLossyPcap checks that a pcap of a lossy path shows exactly the
// segments the chain dropped missing: every segment sent is in the capture
// or among the drops, and none in both.
func TestLossyPcap(t *testing.T) {
	pkts := lossyTraffic(t, 120)
	var pcap bytes.Buffer
	ev, _, snap := runLossy(t, "netem limit 100000 delay 5ms loss 3%", pkts, &pcap)
	captured := map[segKey]int{}
	for _, rec := range readPcap(t, pcap.Bytes()) {
		for _, k := range segKeys(rec, segMSS) {
			captured[k]++
		}
	}
	dropped, sent := 0, 0
	for _, p := range pkts {
		for _, k := range segKeys(p[tun.VNetHdrLen:], segMSS) {
			sent++
			_, lost := ev[k]
			if lost {
				dropped++
			}
			if n := captured[k]; lost == (n == 1) || n > 1 {
				t.Errorf("segment %v: dropped %v, captured %d times", k, lost, n)
			}
		}
	}
	if dropped == 0 || uint64(dropped) != snap.Counters.Dropped || len(captured) != sent-dropped {
		t.Errorf("%d of %d segments dropped (router: %d), %d captured", dropped, sent, snap.Counters.Dropped, len(captured))
	}
}

// TestGROMergesInterleaved runs two flows through fq_codel, whose round
// robin lets their segments go one by one in turn, and checks that the
// egress writes each flow's segments due together as one super-packet
// again, which segments into exactly the segments sent.
func TestGROMergesInterleaved(t *testing.T) {
	var pkts [][]byte
	var want []segKey
	seq := [2]uint32{0, 0}
	for i := range 40 {
		f := i % 2
		b := vnetPacket(t, packet.TCP{SrcPort: uint16(40000 + f), DstPort: 5201, Seq: seq[f], Payload: 20 * segMSS, MSS: segMSS, ID: uint16(i * 20), Fill: byte(i)})
		pkts = append(pkts, b)
		want = append(want, segKeys(b[tun.VNetHdrLen:], segMSS)...)
		seq[f] += 20 * segMSS
	}
	c := &fakeVNet{pkts: pkts, perRead: readBatch, budget: len(pkts)}
	s := &fakeVNet{perRead: readBatch, keep: true}
	r, err := New(Config{Up: link.Config{Chain: mustChain(t, "fq_codel")}, Client: c, Server: s})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.up.close(); r.down.close() }()
	for end := time.Now().Add(5 * time.Second); s.segs < len(want) && time.Now().Before(end); {
		step(r.up)
	}
	snap := r.up.snapshot()
	if snap.GSO.GROWrites == 0 || s.written >= len(want)/4 {
		t.Errorf("%d writes for %d segments, %d coalesced: want the interleaved segments merged back", s.written, len(want), snap.GSO.GROWrites)
	}
	// Per flow, the server gets every segment once, in order, and each
	// segment is the original's.
	next := map[uint16]int{}
	orig := map[segKey][]byte{}
	for _, b := range pkts {
		for _, seg := range splitVNet(t, b) {
			orig[segKeys(seg, segMSS)[0]] = seg
		}
	}
	for _, seg := range s.got {
		k := segKeys(seg, segMSS)[0]
		if !bytes.Equal(seg, orig[k]) {
			t.Fatalf("segment %v differs from the one sent", k)
		}
		if i := next[k.port]; i >= len(want) || k.seq != uint32(i*segMSS) {
			t.Fatalf("flow %d: segment at %d, want %d", k.port, k.seq, i*segMSS)
		}
		next[k.port]++
	}
	if len(s.got) != len(want) {
		t.Errorf("server got %d segments, want %d", len(s.got), len(want))
	}
}

// splitVNet returns the segments of a header and packet as a fake device
// hands it out, with complete checksums, as the receiving kernel sees
// them.
func splitVNet(t *testing.T, b []byte) [][]byte {
	t.Helper()
	h, _ := packet.DecodeVirtioNetHdr(b)
	f := &fakeVNet{keep: true}
	f.keepSegments(b[tun.VNetHdrLen:], h, 64)
	return f.got
}

// wireKey names an IPv4 TCP segment on the wire: its sequence number and
// its IP identification, which a retransmission does not share.
type wireKey struct {
	seq uint32
	id  uint16
}

// wireKeys returns the segments of the IPv4 TCP packet b, cut into mss
// bytes of payload each; none for a packet without payload.
func wireKeys(b []byte, mss int) []wireKey {
	hl := 20 + int(b[20+12]>>4)*4
	seq, id := binary.BigEndian.Uint32(b[24:]), binary.BigEndian.Uint16(b[4:])
	var out []wireKey
	for i, off := 0, 0; off < len(b)-hl; i, off = i+1, off+mss {
		out = append(out, wireKey{seq + uint32(off), id + uint16(i)})
	}
	return out
}

// wireEvents collects, from the up direction's hook, the segments that
// entered the link and those dropped (keyed as wireKeys), for one source
// address.
type wireEvents struct {
	src           [4]byte
	mss           int
	sent, dropped map[wireKey]bool
}

func (w *wireEvents) Event(e *link.Event) {
	b := e.Packet.Bytes()
	if b[0]>>4 != 4 || b[9] != packet.ProtoTCP || [4]byte(b[12:16]) != w.src {
		return
	}
	if e.Packet.Segs > 1 {
		w.mss = max(w.mss, int(e.Packet.SegSize))
	}
	mss := len(b) // one segment
	if e.Packet.Segs > 1 {
		mss = int(e.Packet.SegSize)
	}
	switch e.Kind {
	case link.Enqueue:
		for _, k := range wireKeys(b, mss) {
			w.sent[k] = true
		}
	case link.Drop:
		for _, k := range wireKeys(b, mss) {
			w.dropped[k] = true
		}
	}
}

// TestKernelTCPLossyPcap sends kernel TCP through netem loss 1% with the
// router's pcap on, and checks that the capture holds exactly the segments
// the chain did not drop: every segment that entered the link (the IP
// identification tells a retransmission apart) is captured or dropped,
// never both.
func TestKernelTCPLossyPcap(t *testing.T) {
	roottest.NeedRoot(t)
	w := &wireEvents{sent: map[wireKey]bool{}, dropped: map[wireKey]bool{}}
	b := newBed(t, bedOptions{kind: tun.VNet, up: "netem loss 1%", seed: 3, pcap: true, upHook: w})
	w.src = b.c.v4.As4()
	b.transfer(t, b.s.v4, randomData(16<<20))
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if w.mss == 0 {
		t.Fatal("no super-packet crossed: the test does not bite")
	}
	captured := map[wireKey]int{}
	for _, rec := range readPcap(t, b.pcap.Bytes()) {
		if rec[0]>>4 == 4 && rec[9] == packet.ProtoTCP && [4]byte(rec[12:16]) == w.src {
			for _, k := range wireKeys(rec, w.mss) {
				captured[k]++
			}
		}
	}
	bad := 0
	for k := range w.sent {
		n, lost := captured[k], w.dropped[k]
		if (lost && n != 0 || !lost && n != 1) && bad < 10 {
			bad++
			t.Errorf("segment seq %d id %d: dropped %v, captured %d times", k.seq, k.id, lost, n)
		}
	}
	for k := range captured {
		if !w.sent[k] && bad < 10 {
			bad++
			t.Errorf("segment seq %d id %d captured but never sent", k.seq, k.id)
		}
	}
	t.Logf("%d segments sent (segment size %d), %d dropped, %d captured", len(w.sent), w.mss, len(w.dropped), len(captured))
	if len(w.dropped) == 0 || len(captured)+len(w.dropped) != len(w.sent) {
		t.Errorf("%d sent, %d dropped, %d captured", len(w.sent), len(w.dropped), len(captured))
	}
}
