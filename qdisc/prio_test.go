package qdisc

import (
	"slices"
	"strings"
	"testing"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// With tc's default priomap, prio puts a packet in the band pfifo_fast
// would (the kernel's forwarding path sets its priority from the TOS):
// the table of the semantics notes.
func TestPrioPriomapByTOS(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := NewPrio(PrioConfig{Handle: 1}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	custom, err := NewPrio(PrioConfig{Handle: 1, Bands: 4, Priomap: []uint8{3, 3, 3, 3, 3, 3, 0, 0, 3, 3, 3, 3, 3, 3, 3, 3}}, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tos          uint8
		band, custom int
	}{
		{0x00, 1, 3}, {0x02, 1, 3}, {0x04, 1, 3}, {0x18, 1, 3}, {0x20, 1, 3}, {0xc0, 1, 3}, {0xb8, 1, 3},
		{0x10, 0, 0}, {0x14, 0, 0}, {0x30, 0, 0}, {0x50, 0, 0}, {0x90, 0, 0},
		{0x08, 2, 3}, {0x0c, 2, 3}, {0x28, 2, 3}, {0x48, 2, 3}, {0x88, 2, 3},
	} {
		p := coretest.UDP(pool, 100, 1, c.tos, 0)
		if got := q.classify(p.Bytes()); got != c.band {
			t.Errorf("tos %#02x: band %d, want %d", c.tos, got, c.band)
		}
		if got := custom.classify(p.Bytes()); got != c.custom {
			t.Errorf("tos %#02x, custom priomap: band %d, want %d", c.tos, got, c.custom)
		}
		p.Free()
	}
}

// Filters come first: flowid 1:N is band N-1, a minor outside the bands
// the band of priority 0; a packet no filter matches goes by the priomap.
func TestPrioFilters(t *testing.T) {
	cfg := PrioConfig{Handle: 1, Filters: []Filter{
		dscpFilter(t, 1, 0x10, id(3)),
		dscpFilter(t, 1, 0x28, id(9)),
		dscpFilter(t, 2, 0x48, MakeClassID(7, 1)), // the major does not matter
	}}
	q, err := NewPrio(cfg, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	for _, c := range []struct {
		tos  uint8
		band int
	}{{0x10, 2}, {0x28, 1}, {0x48, 0}, {0x08, 2}, {0x00, 1}} {
		p := coretest.UDP(pool, 100, 1, c.tos, 0)
		if got := q.classify(p.Bytes()); got != c.band {
			t.Errorf("tos %#02x: band %d, want %d", c.tos, got, c.band)
		}
		p.Free()
	}
	if w := strings.Join(Warnings(cfg, nil), "\n"); !strings.Contains(w, "filter 2 (prio 1): flowid 1:9 names no band (1 to 3)") {
		t.Errorf("warnings: %q", w)
	}
}

// Bands are served in strict priority; a band whose discipline holds
// packets it will not send yet (a tbf) lets the bands below go.
func TestPrioStrict(t *testing.T) {
	cfg := PrioConfig{Handle: 1, Leaves: [][]Spec{{TBFConfig{Rate: mbit(1), Burst: 1600, Limit: 100000}}}}
	tr := newTree(t, cfg)
	tr.send(0, 3, 1500, 2, 0x00) // band 1
	tr.send(0, 3, 1500, 1, 0x10) // band 0, behind its tbf
	tr.send(0, 2, 1500, 3, 0x08) // band 2
	times, ports := tr.drain(0, clock.Never)
	// At 0: band 0's burst lets one through, then bands 1 and 2 drain;
	// band 0's tbf lets the rest go 11.424 and 12.112 ms later.
	if !slices.Equal(ports, []uint16{1, 2, 2, 2, 3, 3, 1, 1}) {
		t.Errorf("ports %v", ports)
	}
	if times[6] != 11424*1000 || times[7] != 23536*1000 {
		t.Errorf("times %v", times)
	}
	coretest.CheckLive(t, tr.pool, 0)

	// Under a tbf, prio decides what goes in strict priority.
	tr = &tree{t: t, pool: packet.NewPool(2048, packet.DefaultHeadroom), rec: &recorder{}}
	tr.env = &Env{Observer: tr.rec, Pool: tr.pool}
	q, err := Build([]Spec{TBFConfig{Rate: mbit(1), Burst: 1600, Limit: 100000}, PrioConfig{}}, tr.env)
	if err != nil {
		t.Fatal(err)
	}
	tr.q = q
	tr.send(0, 3, 1500, 3, 0x08)
	tr.send(0, 3, 1500, 2, 0x00)
	tr.send(0, 3, 1500, 1, 0x10)
	_, ports = tr.drain(0, clock.Never)
	if !slices.Equal(ports, []uint16{1, 1, 1, 2, 2, 2, 3, 3, 3}) {
		t.Errorf("under tbf: ports %v", ports)
	}
}

func TestPrioRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg  PrioConfig
		want string
	}{
		{PrioConfig{Bands: 1}, "bands 1 out of range; give 2 to 16"},
		{PrioConfig{Bands: 17}, "bands 17 out of range"},
		{PrioConfig{Bands: 2}, "tc's default priomap (1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1) sends priority 1 to band 2"},
		{PrioConfig{Priomap: []uint8{0, 1}}, "the priomap has 2 entries"},
		{PrioConfig{Leaves: make([][]Spec, 4)}, "4 band chains for 3 bands"},
		{PrioConfig{Handle: 1, Filters: []Filter{{Parent: id(1), Prio: 1, Protocol: ProtocolIP, ClassID: id(1)}}}, "parent 1:1: prio's classes take no filters"},
		{PrioConfig{Leaves: [][]Spec{{NetemConfig{}, HTBConfig{}, FifoConfig{}}}}, "htb takes its child qdiscs under its classes"},
	} {
		if _, err := Build([]Spec{c.cfg}, &Env{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// prio_tune in place: fewer bands drop the packets of those that go,
// more bands get the default pfifo; a band's chain changes as tc would.
func TestPrioChange(t *testing.T) {
	tr := newTree(t, PrioConfig{Handle: 1})
	q := tr.q.(*Prio)
	tr.send(0, 2, 100, 1, 0x10) // band 0
	tr.send(0, 3, 100, 1, 0x08) // band 2
	two := PrioConfig{Handle: 1, Bands: 2, Priomap: []uint8{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, Leaves: [][]Spec{{FifoConfig{Variant: "pfifo", Limit: 5}}}}
	if err := q.Change(0, two); err != nil {
		t.Fatal(err)
	}
	// Band 2 went with its 3 packets; band 0's default pfifo became an
	// explicit one, which replaces it (tc qdisc add), with its 2 packets.
	if q.Len() != 0 || tr.rec.count(ReasonFlushed) != 5 || len(q.Bands()) != 2 || q.Bands()[0].DefaultLeaf {
		t.Errorf("len %d, %d flushed, bands %+v", q.Len(), tr.rec.count(ReasonFlushed), q.Bands())
	}
	tr.send(0, 2, 100, 1, 0x10)
	two.Leaves[0] = []Spec{FifoConfig{Variant: "pfifo", Limit: 7}}
	two.Bands = 5
	if err := q.Change(0, two); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 2 || len(q.Bands()) != 5 || q.Bands()[0].Leaf.Config().(FifoConfig).Limit != 7 || !q.Bands()[4].DefaultLeaf {
		t.Errorf("len %d, bands %+v", q.Len(), q.Bands())
	}
	if err := q.Change(0, PrioConfig{Handle: 2}); err == nil {
		t.Errorf("the handle changed in place")
	}
	c := q.Config().(PrioConfig)
	if c.Bands != 5 || len(c.Priomap) != 16 || c.Leaves[0][0].(FifoConfig).Limit != 7 || c.Leaves[1] != nil {
		t.Errorf("Config %+v", c)
	}
}
