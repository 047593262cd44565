package qdisc

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// tree is a classful discipline under test on a virtual clock.
type tree struct {
	t    *testing.T
	pool *packet.Pool
	rec  *recorder
	env  *Env
	q    Qdisc
	seq  int64
}

func newTree(t *testing.T, spec Spec) *tree {
	t.Helper()
	tr := &tree{t: t, pool: packet.NewPool(2048, packet.DefaultHeadroom), rec: &recorder{}}
	tr.env = &Env{Observer: tr.rec, Pool: tr.pool, Seed: 1}
	q, err := Build([]Spec{spec}, tr.env)
	if err != nil {
		t.Fatal(err)
	}
	tr.q = q
	return tr
}

// send enqueues n IPv4/UDP packets of size bytes with the TOS byte tos at
// now, from port port.
func (tr *tree) send(now clock.Time, n, size int, port uint16, tos uint8) {
	for range n {
		tr.q.Enqueue(now, coretest.UDP(tr.pool, size, port, tos, tr.seq))
		tr.seq++
	}
}

// drain releases everything due from now until until, returning each
// packet's departure time and source port.
func (tr *tree) drain(now, until clock.Time) (times []clock.Time, ports []uint16) {
	for now <= until {
		p, next := tr.q.Dequeue(now)
		if p != nil {
			times = append(times, now)
			ports = append(ports, srcPort(p))
			p.Free()
			continue
		}
		if next == clock.Never {
			break
		}
		if next <= now {
			tr.t.Fatalf("Dequeue(%v): no packet and next %v, not in the future", now, next)
		}
		now = next
	}
	return times, ports
}

// dscpFilter is "match ip dsfield TOS 0xfc flowid CLASS" at prio.
func dscpFilter(t *testing.T, prio uint16, tos uint8, class ClassID) Filter {
	t.Helper()
	f := Filter{Prio: prio, Protocol: ProtocolIP, ClassID: class}
	if err := f.MatchField("ip", "dsfield", uint32(tos), 0xfc); err != nil {
		t.Fatal(err)
	}
	return f
}

// The burst and cburst tc hands the kernel, in psched ticks, as this
// machine's tc (iproute2 6.1) and kernel showed them for "tc class add
// ... htb rate R [burst B]" ("tc -r -d class show": buffer [000000bb]).
func TestHTBBufferAsTC(t *testing.T) {
	for _, c := range []struct {
		rate  Rate
		burst int
		ticks int64
	}{
		{mbit(1), 1600, 200000},
		{mbit(1), 1000, 125000},
		{mbit(3), 1000, 41656}, // 2666.67 µs taken as 2666
		{mbit(3), 1600, 66656},
		{mbit(100), 1600, 2000},
		{mbit(500), 1600, 390}, // 25.6 µs taken as 25
		{mbit(1000), 1600, 187},
		{mbit(2000), 1600, 93},
	} {
		d, ok := HTBBuffer(c.rate, c.burst)
		if !ok || int64(d) != c.ticks<<6 {
			t.Errorf("HTBBuffer(%d bit/s, %d) = %v, %v; want %d ticks", c.rate.BitsPerSecond(), c.burst, d, ok, c.ticks)
		}
	}
	if got := HTBDefaultBurst(mbit(1000), 0); got != 1600 {
		t.Errorf("default burst at 1gbit = %d, want 1600 (rate/1e9 + mtu)", got)
	}
	if got := HTBDefaultBurst(mbit(16000), 2000); got != 2002 {
		t.Errorf("default burst at 16gbit, mtu 2000 = %d, want 2002 (2e9 bytes/s / 1e9 + 2000)", got)
	}
	if _, ok := HTBBuffer(1, 1<<30); ok {
		t.Errorf("a burst of 1 GiB at 8 bit/s fits tc's 32-bit buffer")
	}
}

// One class at 1 Mbit/s: its bucket holds 1600 bytes (12.8 ms), a
// 1514-byte packet costs 12.112 ms. Two leave at once (12.8 - 12.112 =
// 0.688 ms left, then -11.424 ms); the class is then over its ceil until
// its tokens are back at 0, and each later packet leaves 12.112 ms after
// the one before.
func TestHTBOneClassPaces(t *testing.T) {
	cfg := HTBConfig{Handle: 1, Default: 1, Classes: []HTBClass{{ID: id(1), Rate: mbit(1)}}}
	tr := newTree(t, cfg)
	tr.send(0, 5, 1500, 1, 0)
	times, _ := tr.drain(0, clock.Never)
	want := []clock.Time{0, 0, 11424 * 1000, 23536 * 1000, 35648 * 1000}
	if !slices.Equal(times, want) {
		t.Fatalf("departures %v, want %v", times, want)
	}
	h := tr.q.(*HTB)
	ci := h.Classes()[0]
	if ci.Stats.Packets != 5 || ci.Stats.Bytes != 5*1514 || ci.Lends != 5 || ci.Borrows != 0 || ci.Stats.Overlimits != 4 {
		t.Errorf("class counters %+v", ci)
	}
	if st := h.Stats(); st.Packets != 5 || st.Overlimits != 4 || st.Qlen != 0 {
		t.Errorf("qdisc counters %+v", st)
	}
	// The last charge left the class 12.112 ms in debt.
	if ci.Tokens != -12112*time.Microsecond || ci.Mode != "cant_send" {
		t.Errorf("tokens %v mode %s", ci.Tokens, ci.Mode)
	}
	coretest.CheckLive(t, tr.pool, 0)
}

// Without a default class, what no filter classifies goes to the direct
// queue: first, unshaped, up to direct_qlen packets.
func TestHTBDirectQueue(t *testing.T) {
	cfg := HTBConfig{Handle: 1, DirectQLen: 3,
		Classes: []HTBClass{{ID: id(0x10), Rate: mbit(1)}},
		Filters: []Filter{dscpFilter(t, 1, 0x28, id(0x10))},
	}
	tr := newTree(t, cfg)
	tr.send(0, 3, 1500, 1, 0x28)
	tr.send(0, 5, 1500, 2, 0)
	if got := tr.rec.count(ReasonLimit); got != 2 {
		t.Errorf("%d direct packets dropped, want 2", got)
	}
	times, ports := tr.drain(0, clock.Never)
	if !slices.Equal(ports, []uint16{2, 2, 2, 1, 1, 1}) {
		t.Errorf("ports %v: the direct packets leave first", ports)
	}
	if times[3] != 0 || times[4] != 0 || times[5] != 11424*1000 {
		t.Errorf("departures %v", times)
	}
	h := tr.q.(*HTB)
	if h.DirectPackets() != 3 || h.Stats().Drops != 2 {
		t.Errorf("direct_packets_stat %d, drops %d", h.DirectPackets(), h.Stats().Drops)
	}
}

// The classification rules of htb_classify: a filter naming the qdisc
// (1:0) sends to the direct queue; one naming no class, or no filter
// matching, to the default class; one naming an inner class goes on with
// that class's filters; a loop of filters drops the packet.
func TestHTBClassify(t *testing.T) {
	inner := Filter{Parent: id(1), Prio: 1, Protocol: ProtocolAll, ClassID: id(0x11)}
	if err := inner.MatchField("ip", "sport", 7, 0xffff); err != nil {
		t.Fatal(err)
	}
	loop := Filter{Parent: id(2), Prio: 1, Protocol: ProtocolIP, ClassID: id(2)}
	cfg := HTBConfig{Handle: 1, Default: 0x12,
		Classes: []HTBClass{
			{ID: id(1), Rate: mbit(10)},
			{ID: id(0x11), Parent: id(1), Rate: mbit(1)},
			{ID: id(0x12), Parent: id(1), Rate: mbit(1)},
			{ID: id(2), Rate: mbit(10)},
			{ID: id(0x21), Parent: id(2), Rate: mbit(1)},
		},
		Filters: []Filter{
			dscpFilter(t, 1, 0x28, id(1)),    // to the inner class 1:1
			dscpFilter(t, 1, 0x48, id(0)),    // to the qdisc: direct
			dscpFilter(t, 1, 0x88, id(0x99)), // to no class: default
			dscpFilter(t, 1, 0xb8, id(2)),    // into a loop
			inner,
			loop,
		},
	}
	tr := newTree(t, cfg)
	h := tr.q.(*HTB)
	for _, c := range []struct {
		tos    uint8
		port   uint16
		want   ClassID
		direct bool
	}{
		{0x28, 7, id(0x11), false},
		{0x28, 8, id(0x12), false}, // 1:1's filters miss: the default
		{0x48, 7, 0, true},
		{0x88, 7, id(0x12), false},
		{0x00, 7, id(0x12), false},
		{0xb8, 7, 0, false},
	} {
		p := coretest.UDP(tr.pool, 100, c.port, c.tos, 0)
		cl, direct := h.classify(p.Bytes())
		var got ClassID
		if cl != nil {
			got = cl.id
		}
		if got != c.want || direct != c.direct {
			t.Errorf("tos %#x port %d: class %v direct %v, want %v %v", c.tos, c.port, got, direct, c.want, c.direct)
		}
		p.Free()
	}
	tr.send(0, 1, 100, 7, 0xb8)
	if tr.rec.count(ReasonClassify) != 1 || h.Stats().Drops != 1 {
		t.Errorf("a filter loop: %d classify drops, stats %+v", tr.rec.count(ReasonClassify), h.Stats())
	}
}

// What tc or the kernel refuses is refused, naming the class or filter
// and the fix.
func TestHTBRefuses(t *testing.T) {
	ok := func() HTBConfig {
		return HTBConfig{Handle: 1, Classes: []HTBClass{{ID: id(1), Rate: mbit(10)}, {ID: id(0x10), Parent: id(1), Rate: mbit(1)}}}
	}
	deep := ok()
	deep.Classes = nil
	for i := range 9 {
		deep.Classes = append(deep.Classes, HTBClass{ID: id(uint16(i + 1)), Parent: id(uint16(i)), Rate: mbit(1)})
	}
	for _, c := range []struct {
		name   string
		change func(*HTBConfig)
		want   string
	}{
		{"other major", func(c *HTBConfig) { c.Classes[1].ID = MakeClassID(2, 5) }, "class 2:5 is outside the qdisc's major"},
		{"minor 0", func(c *HTBConfig) { c.Classes[1].ID = id(0) }, "classid 1: names the qdisc itself"},
		{"no rate", func(c *HTBConfig) { c.Classes[1].Rate = 0 }, "class 1:10: rate is required"},
		{"twice", func(c *HTBConfig) { c.Classes[1].ID = id(1) }, "class 1:1 is given twice"},
		{"deep", func(c *HTBConfig) { *c = deep }, "class 1:9: the tree is too deep"},
		{"leaf on inner", func(c *HTBConfig) { c.Classes[0].Leaf = []Spec{FifoConfig{}} }, "class 1:1 has child classes, so no qdisc of its own"},
		{"bad leaf", func(c *HTBConfig) { c.Classes[1].Leaf = []Spec{TBFConfig{}} }, "class 1:10: tbf: rate is required"},
		{"quantum", func(c *HTBConfig) { c.Classes[1].Quantum = -1 }, "class 1:10: quantum -1 out of range"},
		{"burst", func(c *HTBConfig) { c.Classes[1].Rate, c.Classes[1].Burst = 1, 1<<30 }, "class 1:10: burst 1073741824 bytes at rate 8 bit/s is beyond tc's buffer"},
		{"r2q", func(c *HTBConfig) { c.R2Q = -1 }, "r2q -1 out of range"},
		{"filter on no class", func(c *HTBConfig) { c.Filters = []Filter{dscpFilter(t, 1, 0, id(0x10))}; c.Filters[0].Parent = id(5) }, "filter 1 (prio 1, flowid 1:10): parent 1:5 is no class of htb 1:"},
		{"filter prio 0", func(c *HTBConfig) { c.Filters = []Filter{dscpFilter(t, 0, 0, id(0x10))} }, "filter 1 (prio 0, flowid 1:10): prio 0"},
		{"no flowid", func(c *HTBConfig) { c.Filters = []Filter{dscpFilter(t, 1, 0, 0)} }, "no flowid"},
		{"protocol", func(c *HTBConfig) {
			c.Filters = []Filter{dscpFilter(t, 1, 0, id(0x10))}
			c.Filters[0].Protocol = 0x8100
		}, "protocol 0x8100: wanlab's packets are IP"},
		{"protocol mismatch", func(c *HTBConfig) {
			f := dscpFilter(t, 1, 0, id(0x10))
			g := f
			g.Protocol = ProtocolIPv6
			c.Filters = []Filter{f, g}
		}, "filter 2 (prio 1, flowid 1:10): protocol ipv6, where the filters of prio 1 on 1: are protocol ip"},
		{"negative offset", func(c *HTBConfig) {
			c.Filters = []Filter{{Prio: 1, Protocol: ProtocolIP, ClassID: id(0x10), Keys: []U32Key{{Val: 0x0800, Mask: 0xffff, Off: -4}}}}
		}, "reads before the IP header"},
	} {
		cfg := ok()
		c.change(&cfg)
		_, err := Build([]Spec{cfg}, &Env{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// What the kernel accepts silently, or only warns about, builds, with a
// warning that says what happens.
func TestHTBWarnings(t *testing.T) {
	cfg := HTBConfig{Handle: 1, Default: 0x77,
		Classes: []HTBClass{
			{ID: id(1), Rate: mbit(10), Ceil: mbit(5)},
			{ID: id(0x10), Parent: id(0x99), Rate: mbit(1000)},
			{ID: id(0x11), Parent: id(1), Rate: mbit(0.05), Prio: 9},
			{ID: id(0x12), Parent: id(1), Rate: mbit(1), Leaf: []Spec{TBFConfig{Rate: mbit(1), Burst: 1000, Limit: 10000}}},
		},
		Filters: []Filter{dscpFilter(t, 1, 0x28, id(0x50)), dscpFilter(t, 2, 0x28, id(1)), dscpFilter(t, 2, 0x28, id(0x11))},
	}
	cfg.Filters[1].Parent = id(1)
	cfg.Filters[2].Parent = id(0x11)
	if _, err := Build([]Spec{cfg}, &Env{}); err != nil {
		t.Fatal(err)
	}
	w := strings.Join(Warnings(cfg, nil), "\n")
	for _, want := range []string{
		"class 1:1: ceil 5000000 bit/s is below its rate 10000000 bit/s",
		"class 1:10: parent 1:99 does not exist when the class is made, so the kernel makes 1:10 a root class",
		"quantum of class 10010 is big. Consider r2q change.",
		"quantum of class 10011 is small. Consider r2q change.",
		"class 1:11: prio 9 is above 7; the kernel takes it as 7",
		"class 1:12: tbf: burst 1000 is lower than the device MTU",
		"default class 1:77 does not exist",
		"filter 1 (prio 1): flowid 1:50 names no class of htb 1:",
		"filter 2 (prio 2) on 1:1 sends packets back to 1:1: they go round until the kernel drops them",
		"filter 3 (prio 2) on 1:11: 1:11 has no child classes",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

// The u32 keys tc packs for the matches scripts use, as "tc filter show"
// printed them on this machine ("match 00280000/00fc0000 at 0").
func TestU32Packing(t *testing.T) {
	for _, c := range []struct {
		name string
		add  func(f *Filter) error
		want []U32Key
	}{
		{"ip dsfield 0x28 0xfc", func(f *Filter) error { return f.MatchField("ip", "dsfield", 0x28, 0xfc) }, []U32Key{{0x00280000, 0x00fc0000, 0}}},
		{"ip protocol 17 0xff", func(f *Filter) error { return f.MatchField("ip", "protocol", 17, 0xff) }, []U32Key{{0x00110000, 0x00ff0000, 8}}},
		{"ip dport 80 0xffff", func(f *Filter) error { return f.MatchField("ip", "dport", 80, 0xffff) }, []U32Key{{0x00000050, 0x0000ffff, 20}}},
		{"ip sport 80 0xffff", func(f *Filter) error { return f.MatchField("ip", "sport", 80, 0xffff) }, []U32Key{{0x00500000, 0xffff0000, 20}}},
		{"u8 5 0xff at -1", func(f *Filter) error { return f.MatchU8(5, 0xff, -1) }, []U32Key{{0x00000005, 0x000000ff, -4}}},
		{"u16 5 0xffff at 1", func(f *Filter) error { return f.MatchU16(5, 0xffff, 1) }, []U32Key{{0x00000005, 0x0000ffff, 0}}},
		{"ip src 10.1.2.3/8", func(f *Filter) error { return f.MatchPrefix(false, []byte{10, 1, 2, 3}, 8) }, []U32Key{{0x0a000000, 0xff000000, 12}}},
		{"ip dst 10.0.1.2", func(f *Filter) error { return f.MatchPrefix(true, []byte{10, 0, 1, 2}, 32) }, []U32Key{{0x0a000102, 0xffffffff, 16}}},
		{"ip src 0.0.0.0/0", func(f *Filter) error { return f.MatchPrefix(false, []byte{1, 2, 3, 4}, 0) }, []U32Key{{0, 0, 12}}},
		{"ip6 dst 2001:db8:f000::1/36", func(f *Filter) error {
			return f.MatchPrefix(true, []byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 15: 1}, 36)
		}, []U32Key{{0x20010db8, 0xffffffff, 24}, {0xf0000000, 0xf0000000, 28}}},
		{"ip6 priority 0xb8 0xfc", func(f *Filter) error { return f.MatchField("ip6", "priority", 0xb8, 0xfc) }, []U32Key{{0x0b800000, 0x0fc00000, 0}}},
		{"ip6 dport 443 0xffff", func(f *Filter) error { return f.MatchField("ip6", "dport", 443, 0xffff) }, []U32Key{{0x000001bb, 0x0000ffff, 40}}},
		{"ip tos and ihl share a word", func(f *Filter) error {
			if err := f.MatchField("ip", "tos", 0x10, 0xff); err != nil {
				return err
			}
			return f.MatchField("ip", "ihl", 0x45, 0xff)
		}, []U32Key{{0x45100000, 0xffff0000, 0}}},
	} {
		var f Filter
		if err := c.add(&f); err != nil || !slices.Equal(f.Keys, c.want) {
			t.Errorf("%s: %v %08x, want %08x", c.name, err, f.Keys, c.want)
		}
	}
	var f Filter
	if err := f.MatchField("ip", "tos", 0x10, 0xff); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []error{
		f.MatchField("ip", "tos", 0x20, 0xff),
		f.MatchPrefix(false, []byte{1, 2, 3}, 8),
		f.MatchPrefix(false, []byte{1, 2, 3, 4}, 33),
		f.MatchU32(1, 1, 2),
		f.MatchU8(0x100, 0xff, 0),
		f.MatchField("ip", "nosuch", 1, 1),
	} {
		if bad == nil {
			t.Errorf("a bad match was packed: %08x", f.Keys)
		}
	}
}

// twoLeaves is htb 1: with 1:1 (10 Mbit/s) over 1:10 and 1:20 (5 Mbit/s
// each), by DSCP.
func twoLeaves(t *testing.T) HTBConfig {
	return HTBConfig{Handle: 1,
		Classes: []HTBClass{
			{ID: id(1), Rate: mbit(10)},
			{ID: id(0x10), Parent: id(1), Rate: mbit(5), Ceil: mbit(10)},
			{ID: id(0x20), Parent: id(1), Rate: mbit(5), Ceil: mbit(10)},
		},
		Filters: []Filter{dscpFilter(t, 1, 0x28, id(0x10)), dscpFilter(t, 1, 0x48, id(0x20))},
	}
}

// tc class change, add and del in place, as the kernel does them.
func TestHTBChange(t *testing.T) {
	tr := newTree(t, twoLeaves(t))
	h := tr.q.(*HTB)
	tr.send(0, 4, 1500, 1, 0x28)
	tr.send(0, 4, 1500, 2, 0x48)
	times, _ := tr.drain(0, 0)
	if len(times) != 4 || h.Len() != 4 {
		t.Fatalf("%d left at once, %d held", len(times), h.Len())
	}
	before := h.Classes()

	// tc class change: the rates change, the tokens and the packets stay.
	c := twoLeaves(t)
	c.Classes[1].Rate, c.Classes[1].Quantum, c.Classes[1].Prio = mbit(2), 3000, 3
	if err := h.Change(0, c); err != nil {
		t.Fatal(err)
	}
	after := h.Classes()
	if h.Len() != 4 || after[1].Tokens != before[1].Tokens || after[1].Class.Rate != mbit(2) || after[1].Class.Quantum != 3000 || after[1].Class.Prio != 3 {
		t.Errorf("after tc class change: len %d, class %+v", h.Len(), after[1])
	}
	if b, _ := HTBBuffer(mbit(2), 1600); after[1].Buffer != b {
		t.Errorf("buffer %v, want %v", after[1].Buffer, b)
	}

	// tc class add under a leaf: the leaf's qdisc goes, with its packets.
	c.Classes = append(c.Classes, HTBClass{ID: id(0x21), Parent: id(0x20), Rate: mbit(1)})
	c.Filters[1].ClassID = id(0x21)
	if err := h.Change(0, c); err != nil {
		t.Fatal(err)
	}
	if got := tr.rec.count(ReasonFlushed); got != 2 || h.Len() != 2 {
		t.Errorf("1:20 gained a child: %d flushed, %d held; want 2 and 2", got, h.Len())
	}
	if ci := h.Classes()[2]; ci.Level != 6 || ci.Leaf != nil {
		t.Errorf("1:20 as an inner class: %+v", ci)
	}

	// tc class del of a class a filter sends to is refused.
	del := c
	del.Classes = slices.Clone(c.Classes[:3])
	if err := h.Change(0, del); err == nil || !strings.Contains(err.Error(), "class 1:21 cannot go while the filter of prio 1 on the qdisc (1:) sends packets to it") {
		t.Errorf("deleting a class in use: %v", err)
	}
	// Without the filter it goes, and 1:20 is a leaf again with the
	// default pfifo and full buckets.
	del.Filters = c.Filters[:1]
	if err := h.Change(5*ms, del); err != nil {
		t.Fatal(err)
	}
	ci := h.Classes()[2]
	if ci.Class.ID != id(0x20) || ci.Level != 0 || !ci.DefaultLeaf || ci.Mode != "can_send" || ci.Tokens != ci.Buffer {
		t.Errorf("1:20 after losing its last child: %+v", ci)
	}
	tr.send(5*ms, 1, 1500, 3, 0) // unclassified: the direct queue
	if h.Len() != 3 || h.DirectPackets() != 1 {
		t.Errorf("len %d, %d direct", h.Len(), h.DirectPackets())
	}

	for _, bad := range []struct {
		change func(*HTBConfig)
		want   string
	}{
		{func(c *HTBConfig) { c.Default = 0x10 }, "cannot change in place"},
		{func(c *HTBConfig) { c.R2Q = 5 }, "cannot change in place"},
		{func(c *HTBConfig) { c.Classes[2].Parent = 0 }, "class 1:20 cannot move from 1:1 to the qdisc (1:) in place"},
		{func(c *HTBConfig) { c.Classes[1].Leaf = []Spec{TBFConfig{Rate: 1}} }, "class 1:10: tbf: burst is required"},
	} {
		c := twoLeaves(t)
		c.Filters = c.Filters[:1]
		bad.change(&c)
		if err := h.Change(5*ms, c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v, want %q", err, bad.want)
		}
		if err := CheckChain(h, []Spec{c}, tr.env); err == nil {
			t.Errorf("CheckChain accepts what Change refuses: %q", bad.want)
		}
	}

	// A leaf's chain changes in place: pfifo to a codel replaces it, a
	// codel to another codel keeps its packets.
	c = twoLeaves(t)
	c.Filters = c.Filters[:1]
	c.Classes[1].Leaf = []Spec{CoDelConfig{Limit: 100}}
	if err := h.Change(5*ms, c); err != nil {
		t.Fatal(err)
	}
	tr.send(5*ms, 3, 1500, 1, 0x28)
	held := h.Len()
	c.Classes[1].Leaf = []Spec{CoDelConfig{Limit: 200}}
	if err := h.Change(5*ms, c); err != nil {
		t.Fatal(err)
	}
	if h.Len() != held || h.Classes()[1].Leaf.Config().(CoDelConfig).Limit != 200 {
		t.Errorf("codel changed in place: len %d (was %d), %+v", h.Len(), held, h.Classes()[1].Leaf.Config())
	}
	if got := h.Config().(HTBConfig); len(got.Classes) != 3 || got.Classes[1].Leaf[0].(CoDelConfig).Limit != 200 || got.Classes[0].Parent != id(0) {
		t.Errorf("Config %+v", got)
	}
	tr.drain(5*ms, clock.Never)
	coretest.CheckLive(t, tr.pool, 0)
}

// Config reports the tree as the kernel holds it, and building it again
// gives the same tree.
func TestHTBConfigRoundTrip(t *testing.T) {
	c := twoLeaves(t)
	c.Classes[2].Leaf = []Spec{TBFConfig{Rate: mbit(1), Burst: 3000, Limit: 30000}}
	q, err := NewHTB(c, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	got := q.Config().(HTBConfig)
	if got.R2Q != 10 || got.DirectQLen != 1000 || got.Classes[1].Ceil != mbit(10) || got.Classes[1].Burst != 1600 || got.Classes[1].Quantum != 62500 || got.Classes[0].CBurst != 1600 {
		t.Errorf("Config: %+v", got)
	}
	again, err := NewHTB(got, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	if g := again.Config(); !reflect.DeepEqual(g, got) {
		t.Errorf("Config of the rebuilt tree:\n%+v\nwant\n%+v", g, got)
	}
	if err := q.Change(0, got); err != nil {
		t.Errorf("changing to its own Config: %v", err)
	}
}

// htb under tbf: tbf's tokens hold what htb would send; htb charges a
// packet once, holding it for tbf as qdisc_peek_dequeued holds it.
func TestHTBUnderTBF(t *testing.T) {
	tr := &tree{t: t, pool: packet.NewPool(2048, packet.DefaultHeadroom), rec: &recorder{}}
	tr.env = &Env{Observer: tr.rec, Pool: tr.pool}
	cfg := HTBConfig{Handle: 1, Default: 1, Classes: []HTBClass{{ID: id(1), Rate: mbit(10)}}}
	q, err := Build([]Spec{TBFConfig{Rate: mbit(1), Burst: 1600, Limit: 10000}, cfg}, tr.env)
	if err != nil {
		t.Fatal(err)
	}
	tr.q = q
	tr.send(0, 6, 1500, 1, 0)
	times, _ := tr.drain(0, clock.Never)
	// tbf at 1 Mbit/s, 1600 bytes of burst: one at once, then every
	// 12.112 ms (the first waits for 12.112 - (12.8 - 12.112) ms).
	want := []clock.Time{0, 11424 * 1000, 23536 * 1000, 35648 * 1000, 47760 * 1000, 59872 * 1000}
	if !slices.Equal(times, want) {
		t.Errorf("departures %v, want %v", times, want)
	}
	h := q.Child().(*HTB)
	if ci := h.Classes()[0]; ci.Stats.Packets != 6 || ci.Lends != 6 {
		t.Errorf("htb charged %d packets, %d lends: want each once", ci.Stats.Packets, ci.Lends)
	}
	coretest.CheckLive(t, tr.pool, 0)
}

// A leaf that is not work-conserving (netem) holds its packets; htb
// wakes when it says.
func TestHTBNetemLeaf(t *testing.T) {
	cfg := HTBConfig{Handle: 1, Default: 1, Classes: []HTBClass{{ID: id(1), Rate: mbit(100), Leaf: []Spec{NetemConfig{Delay: 10 * time.Millisecond, Limit: 100}}}}}
	tr := newTree(t, cfg)
	tr.send(0, 2, 1500, 1, 0)
	if p, next := tr.q.Dequeue(0); p != nil || next != 10*ms {
		t.Fatalf("Dequeue(0) = %v, %v; want nil, 10ms", p, next)
	}
	times, _ := tr.drain(ms, clock.Never)
	if !slices.Equal(times, []clock.Time{10 * ms, 10 * ms}) {
		t.Errorf("departures %v", times)
	}
}

// cycler drives a tree a packet at a time: each step enqueues the next
// of its packets (by DSCP in turn) and dequeues one, a packet's time at
// 10 Gbit/s later.
type cycler struct {
	q    Qdisc
	pkts []*packet.Packet
	now  clock.Time
	i    int
}

func newCycler(tb testing.TB, chain []Spec) *cycler {
	tb.Helper()
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := Build(chain, &Env{Pool: pool})
	if err != nil {
		tb.Fatal(err)
	}
	c := &cycler{q: q}
	for _, tos := range []uint8{0x28, 0x48, 0x88} {
		c.pkts = append(c.pkts, coretest.UDP(pool, 1500, 1, tos, 0))
	}
	return c
}

func (c *cycler) step(tb testing.TB) {
	c.q.Enqueue(c.now, c.pkts[c.i%3])
	p, _ := c.q.Dequeue(c.now)
	if p == nil {
		tb.Fatalf("nothing left at %v", c.now)
	}
	c.pkts[c.i%3] = p
	c.i++
	c.now += 1212
}

// fastThree is the tree of the measures at rates that never hold a
// packet of the cycler back.
func fastThree(tb testing.TB) HTBConfig {
	c := HTBConfig{Handle: 1, Classes: []HTBClass{{ID: id(1), Rate: mbit(40000)}}}
	for i, tos := range []uint8{0x28, 0x48, 0x88} {
		cl := id(uint16(0x10 * (i + 1)))
		c.Classes = append(c.Classes, HTBClass{ID: cl, Parent: id(1), Rate: mbit(float64(10000 * (i + 1))), Ceil: mbit(40000)})
		f := Filter{Prio: 1, Protocol: ProtocolIP, ClassID: cl}
		if err := f.MatchField("ip", "dsfield", uint32(tos), 0xfc); err != nil {
			tb.Fatal(err)
		}
		c.Filters = append(c.Filters, f)
	}
	return c
}

// The tree's packet path allocates nothing.
func TestHTBAllocatesNothing(t *testing.T) {
	for name, chain := range map[string][]Spec{
		"htb":       {fastThree(t)},
		"tbf; htb":  {TBFConfig{Rate: mbit(40000), Burst: 1 << 20, Limit: 1 << 20}, fastThree(t)},
		"prio":      {PrioConfig{Filters: fastThree(t).Filters}},
		"htb, prio": {HTBConfig{Handle: 1, Default: 1, Classes: []HTBClass{{ID: id(1), Rate: mbit(40000), Leaf: []Spec{PrioConfig{Handle: 2}}}}}},
	} {
		c := newCycler(t, chain)
		for range 100 {
			c.step(t)
		}
		if n := testing.AllocsPerRun(1000, func() { c.step(t) }); n != 0 {
			t.Errorf("%s: %v allocations per packet", name, n)
		}
	}
}

// BenchmarkHTB measures a packet's enqueue and dequeue through the tree
// of the measures (classified by u32 through three filters), next to a
// chain that shapes without classes: the difference is what classes and
// classification cost.
func BenchmarkHTB(b *testing.B) {
	for _, c := range []struct {
		name  string
		chain []Spec
	}{
		{"chain tbf", []Spec{TBFConfig{Rate: mbit(40000), Burst: 1 << 20, Limit: 1 << 20}}},
		{"htb 3 classes", []Spec{fastThree(b)}},
		{"prio 3 filters", []Spec{PrioConfig{Filters: fastThree(b).Filters}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cy := newCycler(b, c.chain)
			b.ReportAllocs()
			for b.Loop() {
				cy.step(b)
			}
		})
	}
}

// In a chain, htb changes in place as tc class commands would, keeping
// its packets, and refuses what the kernel refuses before anything
// changes.
func TestHTBInChain(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	env := &Env{Observer: &recorder{}, Pool: pool}
	netem := NetemConfig{Delay: time.Millisecond, Limit: 100}
	root, err := Build([]Spec{netem, twoLeaves(t)}, env)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		root.Enqueue(0, coretest.UDP(pool, 1500, 1, 0x28, int64(i)))
	}
	root.Dequeue(2 * ms) // all due: into htb, one out
	held := root.Len()
	c := twoLeaves(t)
	c.Classes[1].Rate = mbit(1)
	got, rep, err := ChangeChain(2*ms, root, []Spec{netem, c}, env)
	if err != nil || got != root || env.Root != root || rep.String() != "1 netem: changed\n2 htb: changed" || root.Len() != held {
		t.Fatalf("ChangeChain: %v, %q, root kept %v, len %d (was %d)", err, rep, got == root, root.Len(), held)
	}
	c.Default = 0x10
	if _, _, err := ChangeChain(2*ms, root, []Spec{netem, c}, env); err == nil || !strings.Contains(err.Error(), "cannot change in place") {
		t.Errorf("changing htb's default in place: %v", err)
	}
	if _, err := Build([]Spec{twoLeaves(t), FifoConfig{}}, env); err == nil || !strings.Contains(err.Error(), "htb takes its child qdiscs under its classes") {
		t.Errorf("a qdisc after htb in the chain: %v", err)
	}
}
