package link

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
	"wanlab/qdisc"
)

const (
	ms = clock.Time(time.Millisecond)
	us = clock.Time(time.Microsecond)
)

func newPool() *packet.Pool { return packet.NewPool(8192, packet.DefaultHeadroom) }

// mk returns a UDP packet of size bytes for flow f (its source port
// 1000+f) with sequence number seq.
func mk(pool *packet.Pool, f int32, seq int64, size int, ecn packet.ECN) *packet.Packet {
	p := coretest.UDP(pool, size, 1000+uint16(f), uint8(ecn), seq)
	p.Flow = f
	return p
}

// recorder is a Hook that keeps a copy of every event.
type recorder struct{ evs []Event }

func (r *recorder) Event(e *Event) {
	c := *e
	r.evs = append(r.evs, c)
}

func (r *recorder) count(k EventKind) int {
	n := 0
	for _, e := range r.evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// checkBalance asserts that every packet is accounted for and that the
// pool holds exactly the packets still inside the direction.
func checkBalance(t *testing.T, d *Direction, pool *packet.Pool, outside int) {
	t.Helper()
	c := d.Counters()
	if c.Sent+c.Duplicated != c.Delivered+c.Dropped+c.Queued {
		t.Errorf("sent %d + dup %d != delivered %d + dropped %d + queued %d",
			c.Sent, c.Duplicated, c.Delivered, c.Dropped, c.Queued)
	}
	if int(c.Queued) != d.Len() {
		t.Errorf("Queued = %d, Len = %d", c.Queued, d.Len())
	}
	coretest.CheckLive(t, pool, d.Len()+outside)
}

// drainAll releases everything due at now, freeing the packets, and
// returns them (already freed: only their metadata may be read) in order.
func drainAll(d *Direction, now clock.Time) ([]int64, clock.Time) {
	var seqs []int64
	for {
		p, next := d.Dequeue(now)
		if p == nil {
			return seqs, next
		}
		seqs = append(seqs, p.Seq)
		p.Free()
	}
}

func delayDir(t *testing.T, spec delaySpec, cfg Config) (*Direction, *packet.Pool) {
	t.Helper()
	pool := newPool()
	cfg.Env.Pool = pool
	return newWithRoot(t, cfg, delayBuilder(spec)), pool
}

var _ qdisc.Observer = (*Direction)(nil)
