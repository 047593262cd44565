package qdisc_test

import (
	"testing"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// superOf returns a TCP super-packet of segs full segments from pool.
func superOf(t *testing.T, pool *packet.Pool, segs int, seq uint32) *packet.Packet {
	t.Helper()
	p := pool.Get()
	if err := packet.BuildTCP(p, packet.TCP{SrcPort: 1, DstPort: 2, Seq: seq, Payload: segs * segMSS, MSS: segMSS}); err != nil {
		t.Fatal(err)
	}
	return p
}

// gsoTree builds chain under GranularityGSO with Ethernet framing.
func gsoTree(t *testing.T, chain string, rec *segRecorder, pool *packet.Pool) qdisc.Qdisc {
	t.Helper()
	specs, err := tcspec.ParseChain(chain, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := qdisc.Build(specs, &qdisc.Env{Observer: rec, Pool: pool, Seed: 3, Granularity: qdisc.GranularityGSO})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestGSOLengthIsQdiscPktLenInit checks Env.PktLen: the headers and the
// framing of every segment, as qdisc_pkt_len_init counts a GSO skb.
func TestGSOLengthIsQdiscPktLenInit(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	p := superOf(t, pool, 10, 0)
	hdr := packet.TCP{}.TCPHeaderLen()
	if got, want := (&qdisc.Env{}).PktLen(p), 10*segMSS+10*(hdr+14); got != want {
		t.Errorf("Ethernet PktLen %d, want %d", got, want)
	}
	if got, want := (&qdisc.Env{Framing: qdisc.FramingIP}).PktLen(p), 10*segMSS+10*hdr; got != want {
		t.Errorf("IP PktLen %d, want %d", got, want)
	}
}

// TestGSOWholeFates checks that under GranularityGSO a super-packet is one
// packet: netem loses or delivers it whole, and counts one drop for it;
// the fifo's limit counts it once.
func TestGSOWholeFates(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	rec := newSegRecorder()
	q := gsoTree(t, "netem delay 10ms loss 30%", rec, pool)
	const n = 200
	for i := range n {
		q.Enqueue(clock.Time(i), superOf(t, pool, 10, uint32(i*10*segMSS)))
	}
	for {
		p, _ := q.Dequeue(clock.Never - 1)
		if p == nil {
			break
		}
		if p.Segments() != 10 {
			t.Fatalf("a super-packet left in %d segments", p.Segments())
		}
		rec.out(0, p)
	}
	s := q.Stats()
	lost := int(s.Drops)
	if lost < n/5 || lost > n/2 || int(s.Packets) != (n-lost)*10 {
		t.Errorf("%d of %d lost, %d segments sent; want about 30%% lost whole", lost, n, s.Packets)
	}
	for id, ev := range rec.events {
		whole := id.n - id.n%10
		if other := rec.events[segID{id.flow, whole}]; len(other) != 1 || len(ev) != 1 || other[0].what != ev[0].what {
			t.Fatalf("segment %v fared %v, the first of its super-packet %v", id, ev, other)
		}
	}

	f := gsoTree(t, "pfifo limit 3", rec, pool)
	for i := range 5 {
		f.Enqueue(0, superOf(t, pool, 10, uint32(i*10*segMSS)))
	}
	if f.Len() != 3 || f.Stats().Drops != 2 {
		t.Errorf("pfifo limit 3 after 5 super-packets: Len %d, drops %d; want 3 and 2", f.Len(), f.Stats().Drops)
	}
	f.Flush(0)
	if pool.Live() != 0 {
		t.Errorf("%d packets live", pool.Live())
	}
}

// TestGSOTBF checks that under GranularityGSO tbf charges a super-packet
// whole, by its qdisc_pkt_len_init length, and segments one longer than
// max_size whose segments fit (tbf_segment).
func TestGSOTBF(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	rec := newSegRecorder()
	q := gsoTree(t, "tbf rate 8mbit burst 100k limit 1m", rec, pool)
	p := superOf(t, pool, 10, 0)
	length := (&qdisc.Env{}).PktLen(p)
	q.Enqueue(0, p)
	q.Enqueue(0, superOf(t, pool, 10, 10*segMSS))
	first, _ := q.Dequeue(0)
	second, _ := q.Dequeue(0)
	if first == nil || second == nil || first.Segments() != 10 {
		t.Fatalf("two super-packets within the burst: %v, %v", first, second)
	}
	rec.out(0, first)
	rec.out(0, second)
	if s := q.Stats(); s.Bytes != uint64(2*length) || s.Packets != 20 {
		t.Errorf("sent %d bytes, %d packets; want %d and 20", s.Bytes, s.Packets, 2*length)
	}

	small := gsoTree(t, "tbf rate 8mbit burst 5000 limit 1m", rec, pool)
	small.Enqueue(0, superOf(t, pool, 10, 20*segMSS))
	if small.Len() != 10 || small.Stats().Drops != 0 {
		t.Errorf("a super-packet beyond max_size: Len %d, drops %d; want its 10 segments queued", small.Len(), small.Stats().Drops)
	}
	for now, n := clock.Time(0), 0; n < 10; {
		p, next := small.Dequeue(now)
		if p == nil {
			if next == clock.Never {
				t.Fatalf("only %d segments left", n)
			}
			now = next
			continue
		}
		if p.Segments() != 1 {
			t.Fatalf("%d segments left together", p.Segments())
		}
		n++
		rec.out(now, p)
	}
	if pool.Live() != 0 {
		t.Errorf("%d packets live", pool.Live())
	}
}

// TestGSOCorruptSegments checks netem_segment: under GranularityGSO a
// super-packet that netem corrupts is segmented, its first segment
// corrupted with a complete checksum, its other segments enqueued on their
// own after it.
func TestGSOCorruptSegments(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	rec := newSegRecorder()
	q := gsoTree(t, "netem delay 1ms corrupt 100%", rec, pool)
	q.Enqueue(0, superOf(t, pool, 5, 0))
	n := 0
	for {
		p, _ := q.Dequeue(clock.Never - 1)
		if p == nil {
			break
		}
		if p.Segments() != 1 || !p.Corrupted {
			t.Errorf("left: %d segments, corrupted %v; want single corrupted segments", p.Segments(), p.Corrupted)
		}
		n++
		p.Free()
	}
	if n != 5 {
		t.Errorf("%d packets left, want the 5 segments", n)
	}
}
