package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// codelEvent is one drop or mark seen by a codelRecorder.
type codelEvent struct {
	t    clock.Time
	why  Reason
	port uint16 // UDP source port: the test's flow
	seq  int64
}

// codelRecorder is an Observer that records drops and marks and frees the
// dropped packets.
type codelRecorder struct {
	drops []codelEvent
	marks []codelEvent
}

func (r *codelRecorder) Drop(now clock.Time, p *packet.Packet, _ Qdisc, why Reason) {
	r.drops = append(r.drops, codelEvent{now, why, codelSrcPort(p), p.Seq})
	p.Free()
}

func (r *codelRecorder) Mark(now clock.Time, p *packet.Packet, _ Qdisc, why Reason) {
	r.marks = append(r.marks, codelEvent{now, why, codelSrcPort(p), p.Seq})
}

func (r *codelRecorder) count(evs []codelEvent, why Reason) int {
	n := 0
	for _, e := range evs {
		if e.why == why {
			n++
		}
	}
	return n
}

func codelSrcPort(p *packet.Packet) uint16 {
	t, err := packet.ParseTuple(p.Bytes())
	if err != nil {
		return 0
	}
	return t.SrcPort
}

// codelPacket makes an IPv4/UDP packet of n bytes from srcPort with the
// given TOS byte (ECN in its low two bits).
func codelPacket(pool *packet.Pool, n int, srcPort uint16, tos uint8) *packet.Packet {
	p := pool.Get()
	p.SetLen(n)
	packet.WriteUDP4(p.Bytes(), packet.UDP4{
		Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2},
		SrcPort: srcPort, DstPort: 5001, TOS: tos,
	}, n)
	return p
}

// codelTick is the dequeue period of the standing-queue tests: one codel
// time unit, so that every dequeue falls on a unit boundary and each drop
// happens exactly when the control law makes it due.
const codelTick = 1024 * time.Nanosecond

// Kernel values of the default times, in ns: MS2TIME(5) = 4882 units and
// MS2TIME(100) = 97656 units of 1024 ns.
const (
	kernelTarget   = 4882 * codelTick
	kernelInterval = 97656 * codelTick
)

// standingQueue drives a discipline with one dequeue per codelTick and a
// chosen number of 100-byte arrivals per tick, all from one UDP flow.
type standingQueue struct {
	t         *testing.T
	q         Qdisc
	pool      *packet.Pool
	rec       *codelRecorder
	now       clock.Time
	tos       uint8
	seq       int64
	enqueued  int
	delivered int
	marked    int // delivered packets that carry CE
	// sojourn is the sojourn time of the last delivered packet.
	sojourn time.Duration
}

func newStandingQueue(t *testing.T, build func(env *Env) Qdisc, tos uint8) *standingQueue {
	rec := &codelRecorder{}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	env := &Env{Observer: rec, Pool: pool, MTU: 1500}
	return &standingQueue{t: t, q: build(env), pool: pool, rec: rec, tos: tos}
}

func (s *standingQueue) arrive(n int) {
	for range n {
		p := codelPacket(s.pool, 100, 7000, s.tos)
		p.Seq = s.seq
		s.seq++
		s.enqueued++
		if v := s.q.Enqueue(s.now, p); v != Queued {
			s.t.Fatalf("enqueue at %v: verdict %d", s.now, v)
		}
	}
}

// step enqueues arrivals packets, dequeues one and advances the clock.
func (s *standingQueue) step(arrivals int) {
	s.arrive(arrivals)
	if p, _ := s.q.Dequeue(s.now); p != nil {
		s.delivered++
		s.sojourn = s.now.Sub(p.Enqueued)
		if packet.ECNOf(p.Bytes()) == packet.CE {
			s.marked++
		}
		p.Free()
	}
	s.now = s.now.Add(codelTick)
}

// runUntil steps with arrivals per tick until cond holds, or fails after
// limit ticks.
func (s *standingQueue) runUntil(arrivals int, limit int, cond func() bool) {
	for range limit {
		if cond() {
			return
		}
		s.step(arrivals)
	}
	s.t.Fatalf("condition not reached within %d ticks (now %v)", limit, s.now)
}

// checkNoLeak asserts that every live packet is still queued.
func (s *standingQueue) checkNoLeak() {
	if live, held := s.pool.Live(), s.q.Len(); live != held {
		s.t.Errorf("pool has %d live packets, discipline holds %d", live, held)
	}
}

// eventTimes returns the times of the events with reason why.
func eventTimes(evs []codelEvent, why Reason) []clock.Time {
	var ts []clock.Time
	for _, e := range evs {
		if e.why == why {
			ts = append(ts, e.t)
		}
	}
	return ts
}

func gaps(ts []clock.Time) []time.Duration {
	var g []time.Duration
	for i := 1; i < len(ts); i++ {
		g = append(g, ts[i].Sub(ts[i-1]))
	}
	return g
}
