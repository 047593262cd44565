package qdisc_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
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

// packetLog is an Observer that logs every drop and mark, with the time and
// the packet's TCP sequence number; a test logs departures beside them.
type packetLog struct{ events []string }

// seqOf returns the TCP sequence number of p, an IPv4 packet.
func seqOf(p *packet.Packet) uint32 { return binary.BigEndian.Uint32(p.Bytes()[24:]) }

func (l *packetLog) Drop(now clock.Time, p *packet.Packet, from qdisc.Qdisc, why qdisc.Reason) {
	l.events = append(l.events, fmt.Sprintf("%d: %d drop:%s@%s", now, seqOf(p), why, from.Kind()))
	p.Free()
}

func (l *packetLog) Mark(now clock.Time, p *packet.Packet, from qdisc.Qdisc, why qdisc.Reason) {
	l.events = append(l.events, fmt.Sprintf("%d: %d mark:%s@%s", now, seqOf(p), why, from.Kind()))
}

// TestGSOSuperPacketIsOnePacket checks that under GranularityGSO every
// discipline that takes a packet whole decides on a super-packet exactly
// as on a packet of one segment as long as its Env.PktLen: the same drops,
// marks and departures at the same times, the same lengths and backlogs,
// and the same counters, but for Packets, which counts the super-packet's
// wire segments. Both kinds take the disciplines' short way for a packet of
// one unit: this holds that way to a super-packet's lengths and counts.
// The queues build up (an arrival every 50 µs, a dequeue
// every 53 µs, for a second) until each discipline drops, or marks.
func TestGSOSuperPacketIsOnePacket(t *testing.T) {
	const segs, mss = 10, 100
	for _, c := range []struct {
		chain          string
		minDrop, minCE int // for the test to bite
	}{
		{"codel target 1ms interval 10ms", 100, 0},
		{"codel target 1ms interval 10ms ecn", 0, 100},
		{"codel target 1ms interval 10ms ce_threshold 2ms", 100, 100},
		{"pie target 2ms tupdate 5ms", 100, 0},
		{"pie target 2ms tupdate 5ms ecn", 100, 20},
		{"fq_codel target 1ms interval 10ms noecn", 100, 0},
		{"fq_codel target 1ms interval 10ms ecn", 0, 100},
		{"fq_codel limit 40", 100, 0},
		{"fq_pie target 2ms tupdate 5ms", 100, 0},
		{"fq_pie target 2ms tupdate 5ms ecn", 50, 50},
		{"fq_pie target 2ms tupdate 5ms ecn ecn_prob 50", 0, 100},
		{"fq_pie limit 40", 100, 0},
		{"pfifo limit 40", 100, 0},
		{"bfifo limit 75000", 100, 0},
		{"pfifo_head_drop limit 40", 100, 0},
		{"pfifo_fast", 100, 0},
	} {
		t.Run(c.chain, func(t *testing.T) {
			specs, err := tcspec.ParseChain(c.chain, tcspec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				log   packetLog
				trace []string
				stats qdisc.Stats
			}
			run := func(super bool) result {
				var r result
				pool := packet.NewPool(packet.DefaultHeadroom+2048, packet.DefaultHeadroom)
				env := &qdisc.Env{Observer: &r.log, Pool: pool, Seed: 3, Granularity: qdisc.GranularityGSO, TxQueueLen: 100}
				q, err := qdisc.Build(specs, env)
				if err != nil {
					t.Fatal(err)
				}
				const us = clock.Time(1000)
				seq := uint32(0)
				for now := clock.Time(0); now < 1e6*us; now += us {
					if now%(50*us) == 0 {
						p := pool.Get()
						s := packet.TCP{SrcPort: 1, DstPort: 2, Seq: seq, TOS: 2, Payload: segs * mss, MSS: mss}
						if !super {
							// One segment as long as the super-packet counts.
							s.Payload = segs*(mss+s.TCPHeaderLen()+14) - s.TCPHeaderLen() - 14
							s.MSS = s.Payload
						}
						if err := packet.BuildTCP(p, s); err != nil {
							t.Fatal(err)
						}
						if super != (p.Segs > 1) {
							t.Fatalf("built %d segments", p.Segs)
						}
						q.Enqueue(now, p)
						seq++
					}
					if now%(53*us) == 0 {
						if p, _ := q.Dequeue(now); p != nil {
							if super && p.Segments() != segs {
								t.Fatalf("a super-packet left in %d segments", p.Segments())
							}
							r.log.events = append(r.log.events, fmt.Sprintf("%d: %d out", now, seqOf(p)))
							p.Free()
						}
						r.trace = append(r.trace, fmt.Sprintf("%d: len %d backlog %d", now, q.Len(), q.Backlog()))
					}
				}
				r.stats = q.Stats()
				q.Flush(1e6 * us)
				if pool.Live() != 0 {
					t.Errorf("%d packets live", pool.Live())
				}
				return r
			}
			super, single := run(true), run(false)
			if !slices.Equal(super.log.events, single.log.events) {
				for i := range min(len(super.log.events), len(single.log.events)) {
					if super.log.events[i] != single.log.events[i] {
						t.Fatalf("event %d: super-packets %q, single packets %q", i, super.log.events[i], single.log.events[i])
					}
				}
				t.Fatalf("%d events with super-packets, %d with single packets", len(super.log.events), len(single.log.events))
			}
			if !slices.Equal(super.trace, single.trace) {
				t.Errorf("lengths and backlogs differ")
			}
			if super.stats.Packets != segs*single.stats.Packets {
				t.Errorf("%d segments sent as super-packets, %d single packets: want %d times as many", super.stats.Packets, single.stats.Packets, segs)
			}
			super.stats.Packets = single.stats.Packets
			if super.stats != single.stats {
				t.Errorf("counters differ:\nsuper-packets  %+v\nsingle packets %+v", super.stats, single.stats)
			}
			ce := 0
			for _, e := range single.log.events {
				if strings.Contains(e, "mark:") {
					ce++
				}
			}
			if int(single.stats.Drops) < c.minDrop || ce < c.minCE {
				t.Errorf("%d dropped, %d marked: want at least %d and %d for the test to bite", single.stats.Drops, ce, c.minDrop, c.minCE)
			}
			t.Logf("%d packets sent, %d dropped, %d marked", single.stats.Packets, single.stats.Drops, ce)
		})
	}
}
