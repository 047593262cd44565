package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

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
	rec       *recorder
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
	rec := &recorder{}
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	env := &Env{Observer: rec, Pool: pool, MTU: 1500}
	return &standingQueue{t: t, q: build(env), pool: pool, rec: rec, tos: tos}
}

func (s *standingQueue) arrive(n int) {
	for range n {
		p := coretest.UDP(s.pool, 100, 7000, s.tos, s.seq)
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
	s.t.Helper()
	coretest.CheckLive(s.t, s.pool, s.q.Len())
}

// eventTimes returns the times of the events with reason why.
func eventTimes(evs []seen, why Reason) []clock.Time {
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
