package qdisc

import (
	"math/rand/v2"
	"testing"

	"wanlab/clock"
	"wanlab/packet"
)

// TestTfifoOrder interleaves pushes of random times (with many ties) and
// pops, and checks that packets leave sorted by (TimeToSend, Order), that
// last is always the latest packet held, and the byte count.
func TestTfifoOrder(t *testing.T) {
	pool := packet.NewPool(256, 0)
	r := rand.New(rand.NewPCG(3, 4))
	var tf tfifo
	held := map[*packet.Packet]bool{}
	var order uint64
	var prev *packet.Packet
	base := clock.Time(0)
	for step := range 5000 {
		if r.IntN(3) != 0 || tf.Len() == 0 {
			p := pool.Get()
			p.SetLen(1 + r.IntN(100))
			p.TimeToSend = base + clock.Time(r.IntN(50))
			p.Order = order
			order++
			tf.push(p)
			held[p] = true
		} else {
			p := tf.pop()
			if prev != nil && (p.TimeToSend < prev.TimeToSend || (p.TimeToSend == prev.TimeToSend && p.Order < prev.Order)) {
				t.Fatalf("step %d: popped (%d, %d) after (%d, %d)", step, p.TimeToSend, p.Order, prev.TimeToSend, prev.Order)
			}
			// Keep pushes from going before what left, to check the order.
			base = p.TimeToSend
			delete(held, p)
			if prev != nil {
				prev.Free()
			}
			prev = p
		}
		var maxT clock.Time = -1
		bytes := 0
		for p := range held {
			maxT = max(maxT, p.TimeToSend)
			bytes += p.Len()
		}
		if len(held) > 0 && tf.last().TimeToSend != maxT {
			t.Fatalf("step %d: last %d, want the maximum %d", step, tf.last().TimeToSend, maxT)
		}
		if tf.Len() != len(held) || tf.Bytes() != bytes {
			t.Fatalf("step %d: Len %d Bytes %d, want %d %d", step, tf.Len(), tf.Bytes(), len(held), bytes)
		}
	}
}
