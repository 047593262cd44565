package link_test

import (
	"testing"

	"wanlab/clock"
	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// TestCountsSegments checks that a direction counts the wire segments and
// framed bytes of super-packets, whole or cut by the tree, and that its
// balance holds: Sent + Duplicated = Delivered + Dropped + Queued.
func TestCountsSegments(t *testing.T) {
	chain, err := tcspec.ParseChain("netem delay 1ms loss 20% duplicate 5%", tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	d, err := link.New(link.Config{Name: "up", Chain: chain, Env: qdisc.Env{Pool: pool, Seed: 5}})
	if err != nil {
		t.Fatal(err)
	}
	const n, segs = 50, 10
	framed := 0
	for i := range n {
		p := pool.Get()
		if err := packet.BuildTCP(p, packet.TCP{SrcPort: 1, DstPort: 2, Seq: uint32(i * segs * 1448), Payload: segs * 1448, MSS: 1448}); err != nil {
			t.Fatal(err)
		}
		framed += (&qdisc.Env{}).PktLen(p)
		d.Enqueue(clock.Time(i), p)
	}
	c := d.Counters()
	if c.Sent != n*segs || c.BytesIn != uint64(framed) || c.Queued+c.Dropped != n*segs+c.Duplicated {
		t.Errorf("after enqueue: %+v; want %d segments and %d bytes in", c, n*segs, framed)
	}
	out, bytes := 0, 0
	for {
		p, _ := d.Dequeue(clock.Time(1e9))
		if p == nil {
			break
		}
		out += p.Segments()
		bytes += (&qdisc.Env{}).PktLen(p)
		p.Free()
	}
	c = d.Counters()
	if c.Delivered != uint64(out) || c.BytesOut != uint64(bytes) || c.Queued != 0 ||
		c.Sent+c.Duplicated != c.Delivered+c.Dropped || c.Dropped == 0 || c.Dropped != c.DroppedByReason.Total() {
		t.Errorf("after release: %+v; %d segments, %d bytes left", c, out, bytes)
	}
	if s := d.Root().Stats(); s.Packets != c.Delivered || s.Drops != c.Dropped {
		t.Errorf("netem sent %d, dropped %d; the direction %d and %d", s.Packets, s.Drops, c.Delivered, c.Dropped)
	}
	if pool.Live() != 0 {
		t.Errorf("%d packets live", pool.Live())
	}
}
