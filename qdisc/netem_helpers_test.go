package qdisc

import (
	"testing"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// fifoChild is a minimal child discipline: a packet FIFO with a limit and an
// optional gate that keeps it closed until openAt.
type fifoChild struct {
	q      ring
	limit  int
	openAt clock.Time
	env    *Env
	enq    int
}

func (f *fifoChild) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	f.enq++
	if f.limit > 0 && f.q.Len() >= f.limit {
		f.env.Drop(now, p, f, ReasonLimit)
		return Dropped
	}
	f.q.Push(p)
	return Queued
}

func (f *fifoChild) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	p, next := f.Peek(now)
	if p != nil {
		f.q.Pop()
	}
	return p, next
}

func (f *fifoChild) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	if f.q.Len() == 0 {
		return nil, clock.Never
	}
	if now < f.openAt {
		return nil, f.openAt
	}
	return f.q.Front(), now
}

func (f *fifoChild) Len() int     { return f.q.Len() }
func (f *fifoChild) Backlog() int { return f.q.Bytes() }
func (f *fifoChild) Stats() Stats { return Stats{Qlen: f.q.Len(), Backlog: f.q.Bytes()} }
func (f *fifoChild) Kind() string { return "testfifo" }
func (f *fifoChild) Child() Qdisc { return nil }
func (f *fifoChild) Config() Spec { return FifoConfig{Variant: "pfifo", Limit: f.limit} }

func (f *fifoChild) Change(clock.Time, Spec) error { return nil }

func (f *fifoChild) Flush(now clock.Time) {
	for p := f.q.Pop(); p != nil; p = f.q.Pop() {
		f.env.Drop(now, p, f, ReasonFlushed)
	}
}

var _ Qdisc = (*fifoChild)(nil)

// bench is a netem under test on a virtual clock.
type bench struct {
	t    testing.TB
	pool *packet.Pool
	rec  *recorder
	env  *Env
	q    Qdisc
	seq  int64
	out  []departure
}

type departure struct {
	at  clock.Time
	seq int64
	p   *packet.Packet
}

func newBench(t testing.TB, cfg NetemConfig) *bench {
	t.Helper()
	return newFramedBench(t, cfg, FramingEthernet)
}

// newFramedBench is newBench on a device of the given framing.
func newFramedBench(t testing.TB, cfg NetemConfig, f Framing) *bench {
	t.Helper()
	b := &bench{t: t, pool: packet.NewPool(2048, packet.DefaultHeadroom), rec: &recorder{}}
	b.env = &Env{Observer: b.rec, Pool: b.pool, Seed: 1, Framing: f}
	n, err := NewNetem(cfg, b.env, nil)
	if err != nil {
		t.Fatalf("NewNetem: %v", err)
	}
	b.q = n
	b.env.Root = n
	return b
}

func (b *bench) netem() *Netem { return b.q.(*Netem) }

// packet makes an IPv4/UDP packet of size bytes, numbered in sending
// order.
func (b *bench) packet(size int, tos uint8) *packet.Packet {
	p := coretest.UDP(b.pool, size, 1, tos, b.seq)
	b.seq++
	return p
}

// send enqueues one packet of size bytes at now and returns it and the verdict.
func (b *bench) send(now clock.Time, size int) (*packet.Packet, Verdict) {
	p := b.packet(size, 0)
	return p, b.q.Enqueue(now, p)
}

// drain dequeues everything due at now, recording departures and freeing
// the packets unless keep.
func (b *bench) drain(now clock.Time, keep bool) clock.Time {
	for {
		p, next := b.q.Dequeue(now)
		if p == nil {
			return next
		}
		d := departure{at: now, seq: p.Seq}
		if keep {
			d.p = p
		} else {
			p.Free()
		}
		b.out = append(b.out, d)
	}
}

// runUntil steps the clock to every deadline up to end, draining.
func (b *bench) runUntil(now, end clock.Time) {
	for now <= end {
		next := b.drain(now, false)
		if next == clock.Never || next > end {
			return
		}
		now = max(next, now)
	}
}

// checkLeaks asserts that every live packet is still inside the discipline
// (or was kept by the test).
func (b *bench) checkLeaks(kept int) {
	b.t.Helper()
	coretest.CheckLive(b.t, b.pool, b.q.Len()+kept)
}

func mbit(m float64) Rate { return Rate(m * 1e6 / 8) }
