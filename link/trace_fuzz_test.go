package link

import (
	"strings"
	"testing"

	"wanlab/clock"
	"wanlab/packet"
)

// FuzzTraceDelivery parses a fuzzed mahimahi trace and, when it is valid,
// sends a fuzzed burst of packets through a direction limited by it (no
// chain: mahimahi's unbounded FIFO). Whatever the trace, every packet
// leaves, in order, at one of the trace's delivery opportunities, never
// before the opportunities up to then carried its bytes
// (OpportunityBytes each, as mahimahi's LinkQueue spends them), and the
// counters and the packet pool balance at the end.
func FuzzTraceDelivery(f *testing.F) {
	f.Add([]byte("0\n1\n1\n3\n"), []byte{250, 10, 0, 255})
	f.Add([]byte("5\n5\n5\n10"), []byte{1, 2, 3})
	f.Add([]byte("4294967296"), []byte{100})
	// The longest period with the longest burst of the largest packets:
	// 128 periods of 50 days, far from the clock's overflow.
	f.Add([]byte("4294967296"), []byte(strings.Repeat("\xff", maxFuzzBurst)))
	f.Add([]byte("0\n0\n0\n1\n"), []byte{255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, text, sizes []byte) {
		tr, err := ParseTrace(text)
		if err != nil {
			return
		}
		if len(sizes) > maxFuzzBurst {
			sizes = sizes[:maxFuzzBurst]
		}
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		d, err := New(Config{Trace: tr})
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for i, s := range sizes {
			size := 28 + int(s)*6 // 28 to 1558 bytes
			p := pool.Get()
			p.SetLen(size)
			packet.WriteUDP4(p.Bytes(), packet.UDP4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, SrcPort: 1, DstPort: 2}, size)
			p.Flow, p.Seq = 0, int64(i)
			total += size
			d.Enqueue(0, p)
		}
		// Walk the clock from opportunity to opportunity as the router's
		// loop would, dequeuing everything due.
		now, seq, sent := clock.Time(0), int64(0), 0
		for steps := 0; ; steps++ {
			if steps > 4*len(sizes)+total/OpportunityBytes+8 {
				t.Fatalf("%d packets still inside after %d steps", d.Len(), steps)
			}
			p, next := d.Dequeue(now)
			if p != nil {
				if p.Seq != seq {
					t.Fatalf("packet %d left where %d was due", p.Seq, seq)
				}
				if tr.Next(now) != now {
					t.Fatalf("packet %d left at %v, not an opportunity (next is %v)", p.Seq, now, tr.Next(now))
				}
				sent += p.Len() // opportunities carry IP bytes, as mahimahi's do
				if carried := opportunitiesUpTo(tr, now) * OpportunityBytes; sent > carried {
					t.Fatalf("%d bytes out by %v, when the opportunities up to then carry %d", sent, now, carried)
				}
				seq++
				p.Free()
				continue
			}
			if next == clock.Never {
				break
			}
			if next <= now {
				t.Fatalf("Dequeue(%v) returned nothing and next %v", now, next)
			}
			now = next
		}
		c := d.Counters()
		if seq != int64(len(sizes)) || c.Sent != uint64(len(sizes)) || c.Delivered != c.Sent || c.Queued != 0 || d.Len() != 0 {
			t.Fatalf("%d of %d packets out; counters %+v, Len %d", seq, len(sizes), c, d.Len())
		}
		if pool.Live() != 0 {
			t.Fatalf("%d packets live after all were freed", pool.Live())
		}
	})
}

// maxFuzzBurst bounds FuzzTraceDelivery's packets.
const maxFuzzBurst = 64

// opportunitiesUpTo counts the trace's delivery opportunities at or before
// at, by walking them one by one.
func opportunitiesUpTo(tr *Trace, at clock.Time) int {
	n := 0
	for c := tr.seek(0); c.t <= at; c = tr.next(c) {
		n++
	}
	return n
}
