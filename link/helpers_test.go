package link

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/link/linktest"
	"wanlab/packet"
	"wanlab/qdisc"
)

const (
	ms = clock.Time(time.Millisecond)
	us = clock.Time(time.Microsecond)
)

func newPool() *packet.Pool { return packet.NewPool(8192, packet.DefaultHeadroom) }

// mk returns a UDP packet of size bytes for flow f with sequence seq.
func mk(pool *packet.Pool, f int32, seq int64, size int, ecn packet.ECN) *packet.Packet {
	p := pool.Get()
	p.SetLen(size)
	packet.WriteUDP4(p.Bytes(), packet.UDP4{
		Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 1, 1},
		SrcPort: 1000 + uint16(f), DstPort: 2000, TOS: uint8(ecn),
	}, size)
	p.Flow, p.Seq = f, seq
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
	if pool.Live() != d.Len()+outside {
		t.Errorf("pool.Live = %d, want %d inside + %d outside", pool.Live(), d.Len(), outside)
	}
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

func delayDir(t *testing.T, spec linktest.DelaySpec, cfg Config) (*Direction, *packet.Pool) {
	t.Helper()
	pool := newPool()
	cfg.Env.Pool = pool
	d, err := NewWithRoot(cfg, linktest.Builder(spec))
	if err != nil {
		t.Fatal(err)
	}
	return d, pool
}

var _ qdisc.Observer = (*Direction)(nil)
