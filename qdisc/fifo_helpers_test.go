package qdisc

import (
	"testing"

	"wanlab/clock"
	"wanlab/packet"
)

// tqEvent is one drop or mark seen by a tqRecorder.
type tqEvent struct {
	t    clock.Time
	kind string
	why  Reason
	seq  int64
}

// tqRecorder is an Observer that records drops and marks and frees dropped
// packets.
type tqRecorder struct {
	drops, marks []tqEvent
}

func (r *tqRecorder) Drop(now clock.Time, p *packet.Packet, from Qdisc, why Reason) {
	r.drops = append(r.drops, tqEvent{now, from.Kind(), why, p.Seq})
	p.Free()
}

func (r *tqRecorder) Mark(now clock.Time, p *packet.Packet, from Qdisc, why Reason) {
	r.marks = append(r.marks, tqEvent{now, from.Kind(), why, p.Seq})
}

// count returns how many drops had reason why.
func (r *tqRecorder) count(why Reason) int {
	n := 0
	for _, e := range r.drops {
		if e.why == why {
			n++
		}
	}
	return n
}

// tqPacket returns an IPv4/UDP packet of n bytes with the given TOS byte and
// sequence number.
func tqPacket(pool *packet.Pool, n int, tos uint8, seq int64) *packet.Packet {
	p := pool.Get()
	p.SetLen(n)
	packet.WriteUDP4(p.Bytes(), packet.UDP4{
		Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2},
		SrcPort: 1000, DstPort: 2000, TOS: tos,
	}, n)
	p.Seq = seq
	return p
}

// tqDeparture is a packet released by a discipline.
type tqDeparture struct {
	t   clock.Time
	seq int64
	len int
}

// tqDrain calls Dequeue from start on, jumping to each returned deadline,
// until q reports clock.Never or the time passes until. It frees every
// packet it receives.
func tqDrain(t *testing.T, q Qdisc, start, until clock.Time) []tqDeparture {
	t.Helper()
	var out []tqDeparture
	now := start
	for now <= until {
		p, next := q.Dequeue(now)
		if p != nil {
			out = append(out, tqDeparture{now, p.Seq, p.Len()})
			p.Free()
			continue
		}
		if next == clock.Never {
			break
		}
		if next <= now {
			t.Fatalf("%s: Dequeue(%v) returned no packet and next %v, not in the future", q.Kind(), now, next)
		}
		now = next
	}
	return out
}

// checkLive fails unless the pool has exactly want packets outstanding.
func checkLive(t *testing.T, pool *packet.Pool, want int) {
	t.Helper()
	if got := pool.Live(); got != want {
		t.Errorf("pool.Live() = %d, want %d (leak or double use)", got, want)
	}
}
