package link

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/link/linktest"
	"wanlab/qdisc"
)

func TestSetRootMovesPackets(t *testing.T) {
	rec := &recorder{}
	d, pool := delayDir(t, linktest.DelaySpec{Delay: 50 * time.Millisecond}, Config{Hook: rec})
	for i := range 5 {
		d.Enqueue(clock.Time(i)*ms, mk(pool, 0, int64(i), 100, 0))
	}
	err := d.SetRoot(linktest.Builder(linktest.DelaySpec{Delay: 10 * time.Millisecond, Limit: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if d.Root().Config().(linktest.DelaySpec).Delay != 10*time.Millisecond {
		t.Fatalf("root not replaced: %v", d.Root().Config())
	}
	// Moved at the latest time seen (4 ms) in their order; the new limit
	// keeps the first three and drops two.
	c := d.Counters()
	if c.Dropped != 2 || c.DroppedByReason[qdisc.ReasonLimit] != 2 || c.Queued != 3 {
		t.Fatalf("after move: %+v", c)
	}
	if p, next := d.Dequeue(4 * ms); p != nil || next != 14*ms {
		t.Fatalf("Dequeue(4ms) = %v, %v; want the moved packets at 14 ms", p, next)
	}
	seqs, _ := drainAll(d, 14*ms)
	if !slices.Equal(seqs, []int64{0, 1, 2}) {
		t.Errorf("order %v", seqs)
	}
	// Arrival is kept: the first packet waited 14 ms.
	if c := d.Counters(); c.Delay.Max != 14e6 || c.Delay.Min != 12e6 {
		t.Errorf("delay %+v", c.Delay)
	}
	if rec.count(Enqueue) != 5 {
		t.Errorf("moving emitted enqueue events: %d", rec.count(Enqueue))
	}
	checkBalance(t, d, pool, 0)
}

func TestSetChainToDirect(t *testing.T) {
	d, pool := delayDir(t, linktest.DelaySpec{Delay: time.Second}, Config{})
	d.Enqueue(0, mk(pool, 0, 0, 100, 0))
	d.Enqueue(0, mk(pool, 0, 1, 100, 0))
	if err := d.SetChain(nil); err != nil {
		t.Fatal(err)
	}
	if d.Root() != nil {
		t.Errorf("direct path has a root")
	}
	if seqs, next := drainAll(d, ms); !slices.Equal(seqs, []int64{0, 1}) || next != clock.Never {
		t.Errorf("got %v next %v", seqs, next)
	}
	checkBalance(t, d, pool, 0)
}

func TestSetRootWithoutDrainRetiresOldTree(t *testing.T) {
	pool := newPool()
	d, _ := NewWithRoot(Config{}, linktest.SwapBuilder(linktest.SwapSpec{Hold: 5 * time.Millisecond, NoDrain: true}))
	for i := range 3 {
		d.Enqueue(0, mk(pool, 0, int64(i), 100, 0))
	}
	if err := d.SetRoot(linktest.Builder(linktest.DelaySpec{})); err != nil {
		t.Fatal(err)
	}
	d.Enqueue(ms, mk(pool, 0, 3, 100, 0))
	if d.Len() != 4 {
		t.Errorf("Len = %d, want 4", d.Len())
	}
	// The old tree releases its pair first; its lone packet 2 waits for
	// its hold (5 ms), so the new tree's packet 3 leaves before it.
	seqs, next := drainAll(d, ms)
	if !slices.Equal(seqs, []int64{1, 0, 3}) || next != 5*ms {
		t.Errorf("got %v next %v", seqs, next)
	}
	seqs, next = drainAll(d, 5*ms)
	if !slices.Equal(seqs, []int64{2}) || next != clock.Never || len(d.retiring) != 0 {
		t.Errorf("got %v next %v, %d retiring", seqs, next, len(d.retiring))
	}
	checkBalance(t, d, pool, 0)
}

func TestSetRootErrorKeepsTree(t *testing.T) {
	d, pool := delayDir(t, linktest.DelaySpec{Delay: ms.Sub(0)}, Config{Name: "up"})
	d.Enqueue(0, mk(pool, 0, 0, 100, 0))
	old := d.Root()
	err := d.SetRoot(func(*qdisc.Env) (qdisc.Qdisc, error) { return nil, errors.New("bad option") })
	if err == nil || err.Error() != "link up: bad option" {
		t.Errorf("error %v", err)
	}
	if d.Root() != old || d.Len() != 1 {
		t.Errorf("tree changed after a failed SetRoot")
	}
	if err := d.SetChain([]qdisc.Spec{linktest.DelaySpec{}}); err == nil {
		t.Error("SetChain with an unregistered kind succeeded")
	}
	if seqs, _ := drainAll(d, ms); fmt.Sprint(seqs) != "[0]" {
		t.Errorf("got %v", seqs)
	}
}
