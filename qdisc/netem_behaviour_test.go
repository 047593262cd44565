package qdisc

import (
	"bytes"
	"math/bits"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

func TestNetemGap(t *testing.T) {
	for _, tc := range []struct {
		oldGap bool
		every  int64
	}{{false, 5}, {true, 6}} {
		b := newBench(t, NetemConfig{Delay: 10 * time.Millisecond, Reorder: 1, Gap: 5, OldGap: tc.oldGap})
		for i := range 30 {
			now := clock.Time(i) * ms / 10
			b.send(now, 100)
			b.drain(now, false)
		}
		b.runUntil(3*ms, 100*ms)
		if len(b.out) != 30 {
			t.Fatalf("%d departures, want 30", len(b.out))
		}
		for _, d := range b.out {
			arrival := clock.Time(d.seq) * ms / 10
			immediate := (d.seq+1)%tc.every == 0
			if want := arrival + 10*ms; immediate {
				if d.at != arrival {
					t.Errorf("oldGap %v: packet %d left at %v, want immediately at %v", tc.oldGap, d.seq+1, d.at, arrival)
				}
			} else if d.at != want {
				t.Errorf("oldGap %v: packet %d left at %v, want %v", tc.oldGap, d.seq+1, d.at, want)
			}
		}
		if got := b.q.Stats().Requeues; got != uint64(30/tc.every) {
			t.Errorf("oldGap %v: requeues %d, want %d", tc.oldGap, got, 30/tc.every)
		}
		b.checkLeaks(0)
	}
}

func bitDiff(a, b []byte) int {
	n := 0
	for i := range a {
		n += bits.OnesCount8(a[i] ^ b[i])
	}
	return n
}

func TestNetemDuplicateClean(t *testing.T) {
	for _, corrupt := range []float64{0, 1} {
		b := newBench(t, NetemConfig{Duplicate: 1, Corrupt: corrupt})
		for i := range 200 {
			p := b.packet(200, 0)
			src := bytes.Clone(p.Bytes())
			b.q.Enqueue(clock.Time(i), p)
			b.drain(clock.Time(i), true)
			if len(b.out) != 2 {
				t.Fatalf("%d packets out, want the duplicate and the original", len(b.out))
			}
			dup, orig := b.out[0].p, b.out[1].p
			if !dup.Dup || orig.Dup {
				t.Fatalf("the duplicate must leave first (it is enqueued first): dup flags %v %v", dup.Dup, orig.Dup)
			}
			want := int(corrupt)
			// Each copy carries at most its own flipped bit: the duplicate
			// was copied before the original was corrupted.
			if d := bitDiff(src, orig.Bytes()); d != want || orig.Corrupted != (want == 1) {
				t.Fatalf("corrupt %v: original differs by %d bits (Corrupted %v), want %d", corrupt, d, orig.Corrupted, want)
			}
			if d := bitDiff(src, dup.Bytes()); d != want {
				t.Fatalf("corrupt %v: duplicate differs by %d bits, want %d", corrupt, d, want)
			}
			dup.Free()
			orig.Free()
			b.out = b.out[:0]
		}
		b.checkLeaks(0)
	}
}

func TestNetemDuplicateOwnDelay(t *testing.T) {
	b := newBench(t, NetemConfig{Delay: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, Duplicate: 1})
	differ := 0
	for i := range 100 {
		now := clock.Time(i) * 200 * ms
		b.send(now, 100)
		b.runUntil(now, now+199*ms)
		if len(b.out) != 2 {
			t.Fatalf("%d departures, want 2", len(b.out))
		}
		if b.out[0].at != b.out[1].at {
			differ++
		}
		b.out = b.out[:0]
	}
	if differ < 95 {
		t.Errorf("duplicate and original left at the same time in %d of 100 cases; the duplicate draws its own delay", 100-differ)
	}
	b.checkLeaks(0)
}

func TestNetemDuplicateLossCancel(t *testing.T) {
	b := newBench(t, NetemConfig{Duplicate: 1, Loss: Loss{Kind: LossRandom, P: 1}})
	for i := range 50 {
		b.send(clock.Time(i), 100)
		b.drain(clock.Time(i), true)
	}
	if len(b.out) != 50 {
		t.Errorf("%d packets out, want 50: loss and duplicate cancel, one copy goes on", len(b.out))
	}
	for _, d := range b.out {
		if d.p.Dup {
			t.Errorf("packet %d is a duplicate; the original should go on", d.seq)
		}
		d.p.Free()
	}
	b.checkLeaks(0)
}

// rootTap wraps the root of a tree and records what enters it.
type rootTap struct {
	Qdisc
	dups, originals int
}

func (r *rootTap) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	if p.Dup {
		r.dups++
	} else {
		r.originals++
	}
	return r.Qdisc.Enqueue(now, p)
}

func TestNetemDuplicateThroughRoot(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	env := &Env{Observer: &recorder{}, Pool: pool}
	child := &fifoChild{env: env}
	n, err := NewNetem(NetemConfig{Delay: time.Millisecond, Duplicate: 1}, env, child)
	if err != nil {
		t.Fatal(err)
	}
	tap := &rootTap{Qdisc: n}
	env.Root = tap
	b := &bench{t: t, pool: pool, env: env, q: tap}
	for i := range 10 {
		b.send(clock.Time(i), 100)
	}
	if tap.dups != 10 || tap.originals != 10 {
		t.Errorf("root saw %d duplicates and %d originals, want 10 and 10", tap.dups, tap.originals)
	}
	if n.Len() != 20 {
		t.Errorf("Len %d, want 20", n.Len())
	}
	b.runUntil(0, 10*ms)
	if len(b.out) != 20 || child.enq != 20 {
		t.Errorf("%d out, child saw %d, want 20 and 20", len(b.out), child.enq)
	}
	b.checkLeaks(0)
}

func TestNetemECN(t *testing.T) {
	b := newBench(t, NetemConfig{Loss: Loss{Kind: LossRandom, P: 1}, ECN: true})
	for _, tos := range []packet.ECN{packet.NotECT, packet.ECT0, packet.ECT1, packet.CE} {
		p := b.packet(100, uint8(tos))
		v := b.q.Enqueue(0, p)
		if tos == packet.NotECT {
			if v != Dropped || b.rec.count(ReasonLoss) != 1 {
				t.Errorf("Not-ECT: verdict %v, loss drops %d; want dropped", v, b.rec.count(ReasonLoss))
			}
			continue
		}
		if v != Queued || !p.Marked || packet.ECNOf(p.Bytes()) != packet.CE || !packet.IPv4HeaderValid(p.Bytes()) {
			t.Errorf("%v: verdict %v marked %v ecn %v checksum ok %v; want queued, CE, valid", tos, v, p.Marked, packet.ECNOf(p.Bytes()), packet.IPv4HeaderValid(p.Bytes()))
		}
	}
	st := b.q.Stats()
	if st.Marks != 3 || len(b.rec.marks) != 3 || st.Drops != 1 || st.DropsByReason[ReasonLoss] != 1 {
		t.Errorf("stats %+v, observer marks %d: want 3 marks (not counted as drops) and 1 loss drop", st, len(b.rec.marks))
	}
	b.drain(0, false)
	b.checkLeaks(0)
}

func TestNetemSlotBudget(t *testing.T) {
	for _, tc := range []struct {
		slot Slot
		want []clock.Time
	}{
		{Slot{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond, Packets: 2}, []clock.Time{0, 0, 10 * ms, 10 * ms, 20 * ms}},
		{Slot{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond, Bytes: 3000}, []clock.Time{0, 0, 10 * ms, 10 * ms, 20 * ms}},
		{Slot{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond, Bytes: 2000}, []clock.Time{0, 0, 10 * ms, 10 * ms, 20 * ms}},
		{Slot{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond, Bytes: 1000}, []clock.Time{0, 10 * ms, 20 * ms, 30 * ms, 40 * ms}},
	} {
		b := newBench(t, NetemConfig{Slot: tc.slot})
		for range 5 {
			b.send(0, 1500)
		}
		b.runUntil(0, clock.Time(time.Second))
		if len(b.out) != len(tc.want) {
			t.Fatalf("%+v: %d departures, want %d", tc.slot, len(b.out), len(tc.want))
		}
		for i, d := range b.out {
			if d.at != tc.want[i] {
				t.Errorf("%+v: packet %d left at %v, want %v", tc.slot, i, d.at, tc.want[i])
			}
		}
		b.checkLeaks(0)
	}
}
