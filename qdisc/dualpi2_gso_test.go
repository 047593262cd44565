package qdisc_test

import (
	"testing"

	"wanlab/clock"
	"wanlab/packet"
)

// Under GranularityGSO, dualpi2 splits a super-packet into its segments
// at enqueue (split_gso, the kernel's default), so the limit counts
// segments; with no_split_gso it is one packet.
func TestGSODualPI2Split(t *testing.T) {
	pool := packet.NewPool(packet.DefaultHeadroom+70000, packet.DefaultHeadroom)
	rec := newSegRecorder()
	for _, c := range []struct {
		chain      string
		len, drops int
		segs       int // segments a dequeued packet carries
	}{
		{"dualpi2 limit 25", 25, 5*10 - 25, 1},
		{"dualpi2 limit 3 memlimit 1000000 no_split_gso", 3, 2, 10},
	} {
		q := gsoTree(t, c.chain, rec, pool)
		for i := range 5 {
			q.Enqueue(0, superOf(t, pool, 10, uint32(i*10*segMSS)))
		}
		if q.Len() != c.len || int(q.Stats().Drops) != c.drops {
			t.Errorf("%s after 5 super-packets of 10: Len %d, drops %d; want %d and %d", c.chain, q.Len(), q.Stats().Drops, c.len, c.drops)
		}
		p, _ := q.Dequeue(clock.Time(1))
		if p == nil || p.Segments() != c.segs {
			t.Errorf("%s: dequeued %v", c.chain, p)
		} else {
			p.Free()
		}
		q.Flush(0)
	}
	if pool.Live() != 0 {
		t.Errorf("%d packets live", pool.Live())
	}
}
