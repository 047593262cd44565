package qdisc

import (
	"testing"

	"wanlab/internal/coretest"
	"wanlab/packet"
)

// TestPfifoFastSpecTable checks the TOS byte to band table that
// sch_generic.c's prio2band and route.c's ip_tos2prio make together.
func TestPfifoFastSpecTable(t *testing.T) {
	table := map[uint8]int{
		0x00: 1, 0x02: 1, 0x04: 1, 0x18: 1, 0x20: 1, 0xC0: 1, 0xB8: 1,
		0x10: 0, 0x14: 0, 0x30: 0, 0x50: 0, 0x90: 0,
		0x08: 2, 0x0C: 2, 0x28: 2, 0x48: 2, 0x88: 2,
	}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	for tos, want := range table {
		p := coretest.UDP(pool, 100, 1000, tos, 0)
		if got := pfifoFastBand(p.Bytes()); got != want {
			t.Errorf("TOS %#02x: band %d, want %d", tos, got, want)
		}
		p.Free()
	}
}

// TestPfifoFastAllTOS derives every TOS byte's band from the RFC 1349 bits
// (0x10 low delay, 0x08 throughput), independently of the kernel tables:
// low delay alone is interactive (band 0), throughput alone is bulk (band
// 2), both are interactive bulk and none best effort (band 1).
func TestPfifoFastAllTOS(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	for tos := range 256 {
		lowDelay, throughput := tos&0x10 != 0, tos&0x08 != 0
		want := 1
		switch {
		case lowDelay && !throughput:
			want = 0
		case throughput && !lowDelay:
			want = 2
		}
		p := coretest.UDP(pool, 64, 1000, uint8(tos), 0)
		if got := pfifoFastBand(p.Bytes()); got != want {
			t.Errorf("TOS %#02x: band %d, want %d", tos, got, want)
		}
		p.Free()
	}
	coretest.CheckLive(t, pool, 0)
}

func TestPfifoFastIPv6AndNonIP(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	p := pool.Get()
	p.SetLen(60)
	b := p.Bytes()
	for _, tc := range []uint8{0x00, 0x10, 0x08, 0xB8} {
		b[0], b[1] = 0x60|tc>>4, tc<<4
		if got := pfifoFastBand(b); got != 1 {
			t.Errorf("IPv6 traffic class %#02x: band %d, want 1 (ip6_forward sets no priority)", tc, got)
		}
	}
	b[0] = 0x00
	if got := pfifoFastBand(b); got != 1 {
		t.Errorf("non-IP: band %d, want 1", got)
	}
	p.Free()
}

func TestPfifoFastPriorityAndLimits(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q, err := Build([]Spec{PfifoFastConfig{}}, &Env{Observer: rec, TxQueueLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Five packets per band, bulk first: each band keeps four.
	seq := int64(0)
	for _, tos := range []uint8{0x08, 0x00, 0x10} {
		for range 5 {
			q.Enqueue(0, coretest.UDP(pool, 100, 1000, tos, seq))
			seq++
		}
	}
	if q.Len() != 12 || rec.count(ReasonLimit) != 3 {
		t.Fatalf("Len %d, %d limit drops; want 12 and 3 (4 per band)", q.Len(), rec.count(ReasonLimit))
	}
	for i, want := range []int64{4, 9, 14} {
		if rec.drops[i].seq != want {
			t.Errorf("drop %d: seq %d, want %d", i, rec.drops[i].seq, want)
		}
	}
	pf := q.(*PfifoFast)
	if pf.BandLen(0) != 4 || pf.BandLen(1) != 4 || pf.BandLen(2) != 4 {
		t.Errorf("band lengths %d %d %d", pf.BandLen(0), pf.BandLen(1), pf.BandLen(2))
	}
	if p, _ := q.Peek(0); p == nil || p.Seq != 10 {
		t.Errorf("Peek = %v, want seq 10 (band 0 head)", p)
	}
	deps := tqDrain(t, q, 0, 0)
	want := []int64{10, 11, 12, 13, 5, 6, 7, 8, 0, 1, 2, 3}
	if len(deps) != len(want) {
		t.Fatalf("%d departures, want %d", len(deps), len(want))
	}
	for i, d := range deps {
		if d.seq != want[i] {
			t.Errorf("departure %d: seq %d, want %d", i, d.seq, want[i])
		}
	}
	// Sent counts each packet's Ethernet header: 12·114 bytes.
	if s := q.Stats(); s.Packets != 12 || s.Bytes != 12*114 || s.Drops != 3 || s.Qlen != 0 {
		t.Errorf("Stats %+v", s)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestPfifoFastEnv(t *testing.T) {
	if _, err := NewPfifoFast(PfifoFastConfig{}, &Env{TxQueueLen: -1}); err == nil {
		t.Error("NewPfifoFast accepted a negative txqueuelen")
	}
	q, err := NewPfifoFast(PfifoFastConfig{}, nil)
	if err != nil || q.limit != 1000 {
		t.Errorf("NewPfifoFast(nil env): %v, limit %d", err, q.limit)
	}
}

func BenchmarkPfifoFast(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, _ := NewPfifoFast(PfifoFastConfig{}, &Env{})
	ps := []*packet.Packet{coretest.UDP(pool, 1500, 1000, 0x10, 0), coretest.UDP(pool, 1500, 1000, 0x00, 1), coretest.UDP(pool, 1500, 1000, 0x08, 2)}
	for _, p := range ps {
		q.Enqueue(0, p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, _ := q.Dequeue(0)
		q.Enqueue(0, p)
	}
}
