package qdisc

import (
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

func TestNetemSlotWaitsFreshSlot(t *testing.T) {
	// A packet that falls due after the slot boundary has passed waits one
	// freshly drawn slot length from the dequeue that notices it.
	b := newBench(t, NetemConfig{Delay: 5 * time.Millisecond, Slot: Slot{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	b.send(0, 100)
	if p, next := b.q.Dequeue(0); p != nil || next != 10*ms {
		t.Fatalf("Dequeue(0) = %v, %v; want nil until the slot opens at 10ms", p, next)
	}
	b.runUntil(0, 15*ms)
	b.send(20*ms, 100)
	b.runUntil(20*ms, 100*ms)
	if len(b.out) != 2 || b.out[0].at != 10*ms || b.out[1].at != 30*ms {
		t.Errorf("departures %v, want 10ms and 30ms", b.out)
	}
	b.checkLeaks(0)
}

func TestNetemSlotUniform(t *testing.T) {
	b := newBench(t, NetemConfig{Limit: 2000, Slot: Slot{Min: time.Millisecond, Max: 5 * time.Millisecond, Packets: 1}})
	for range 2000 {
		b.send(0, 100)
	}
	b.runUntil(0, clock.Time(100*time.Second))
	lo, hi := clock.Never, clock.Time(0)
	for i := 1; i < len(b.out); i++ {
		gap := b.out[i].at - b.out[i-1].at
		lo, hi = min(lo, gap), max(hi, gap)
	}
	if len(b.out) != 2000 || lo < ms || hi >= 5*ms || lo > 1100000 || hi < 4900000 {
		t.Errorf("%d out, slot lengths in [%v, %v], want uniform in [1ms, 5ms)", len(b.out), lo, hi)
	}
	b.checkLeaks(0)
}

func TestNetemChild(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	env := &Env{Observer: rec, Pool: pool}
	child := &fifoChild{env: env, limit: 3, openAt: 50 * ms}
	n, err := NewNetem(NetemConfig{Delay: 10 * time.Millisecond, Limit: 6}, env, child)
	if err != nil {
		t.Fatal(err)
	}
	env.Root = n
	b := &bench{t: t, pool: pool, rec: rec, env: env, q: n}
	for i := range 5 {
		b.send(clock.Time(i)*ms, 100) // due at 10..14 ms
	}
	b.send(30*ms, 100) // due at 40 ms
	if _, v := b.send(30*ms, 100); v != Dropped {
		t.Errorf("7th packet: verdict %v, want dropped by limit 6", v)
	}
	// At 12 ms three are due: they move into the child, which is closed.
	p, next := n.Dequeue(12 * ms)
	if p != nil || next != 13*ms {
		t.Errorf("Dequeue(12ms) = %v, %v; want nil, 13ms (the tfifo head is sooner than the child's 50ms)", p, next)
	}
	if child.Len() != 3 || n.Len() != 6 {
		t.Errorf("child holds %d, netem Len %d; want 3 and 6 (Len includes the child)", child.Len(), n.Len())
	}
	// At 14 ms two more are due; the child is full and refuses them.
	if p, next := n.Dequeue(14 * ms); p != nil || next != 40*ms {
		t.Errorf("Dequeue(14ms) = %v, %v; want nil, 40ms", p, next)
	}
	st := n.Stats()
	if st.Drops != 3 || st.DropsByReason[ReasonLimit] != 1 || rec.count(ReasonLimit) != 3 {
		t.Errorf("stats %+v, observer %v: want 3 drops (1 netem limit, 2 refused by the child)", st, rec.drops)
	}
	// At 45 ms the last one is due, and refused too; only the child holds
	// packets, so its opening is the next time.
	if p, next := n.Dequeue(45 * ms); p != nil || next != 50*ms {
		t.Errorf("Dequeue(45ms) = %v, %v; want nil, 50ms", p, next)
	}
	if st := n.Stats(); st.Drops != 4 || n.Len() != 3 {
		t.Errorf("drops %d, Len %d; want 4 and 3", st.Drops, n.Len())
	}
	b.runUntil(50*ms, 100*ms)
	if len(b.out) != 3 || b.out[0].seq != 0 || b.out[2].seq != 2 || b.out[2].at != 50*ms {
		t.Errorf("departures %v, want packets 0, 1, 2 at 50ms", b.out)
	}
	b.checkLeaks(0)
}

func TestNetemPeek(t *testing.T) {
	b := newBench(t, NetemConfig{Delay: time.Millisecond})
	b.send(0, 100)
	if p, next := b.q.Peek(0); p != nil || next != ms {
		t.Fatalf("Peek(0) = %v, %v; want nil, 1ms", p, next)
	}
	p, _ := b.q.Peek(ms)
	if p == nil || b.q.Len() != 1 {
		t.Fatalf("Peek(1ms) = %v with Len %d; want the packet, still held", p, b.q.Len())
	}
	if q, _ := b.q.Dequeue(ms); q != p {
		t.Fatalf("Dequeue after Peek returned %v, want the peeked %v", q, p)
	}
	if st := b.q.Stats(); st.Packets != 1 || st.Bytes != 114 || st.Qlen != 0 {
		t.Errorf("stats %+v, want 1 packet of 114 bytes (100 + Ethernet header) sent and nothing queued", st)
	}
	p.Free()
	b.checkLeaks(0)
}
