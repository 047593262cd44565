package link

import (
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// The chains of the SetChain tests: real disciplines, whose kinds and
// queues the tests follow.
var (
	netem50 = qdisc.NetemConfig{Delay: 50 * time.Millisecond, Limit: 1000}
	netem10 = qdisc.NetemConfig{Delay: 10 * time.Millisecond, Limit: 1000}
	tbf1m   = qdisc.TBFConfig{Rate: 125000, Burst: 1514, Limit: 100000}
	pfifo   = qdisc.FifoConfig{Variant: "pfifo"}
	fqcodel = qdisc.FQCoDelConfig{ECN: true}
)

// chainDir makes a direction with chain, a recorder as its hook and the
// pool packets come from.
func chainDir(t *testing.T, chain []qdisc.Spec, trace *Trace) (*Direction, *packet.Pool, *recorder) {
	t.Helper()
	pool := newPool()
	rec := &recorder{}
	d, err := New(Config{Name: "up", Chain: chain, Trace: trace, Env: qdisc.Env{Pool: pool}, Hook: rec})
	if err != nil {
		t.Fatal(err)
	}
	return d, pool, rec
}

// kinds lists the kinds of the direction's chain positions, root first.
func kinds(d *Direction) []string {
	var ks []string
	for _, q := range qdisc.Positions(d.Root()) {
		ks = append(ks, q.Kind())
	}
	return ks
}

func setChain(t *testing.T, d *Direction, chain ...qdisc.Spec) qdisc.ChainChange {
	t.Helper()
	rep, err := d.SetChain(chain)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (r *recorder) flushed() int {
	n := 0
	for _, e := range r.evs {
		if e.Kind == Drop && e.Reason == qdisc.ReasonFlushed {
			n++
		}
	}
	return n
}

// The same kind at the same position is changed in place: netem keeps each
// queued packet's departure time, and new packets get the new delay.
func TestSetChainChangesInPlace(t *testing.T) {
	d, pool, _ := chainDir(t, []qdisc.Spec{netem50}, nil)
	root := d.Root()
	for i := range 3 {
		d.Enqueue(clock.Time(i)*ms, mk(pool, 0, int64(i), 100, 0))
	}
	rep := setChain(t, d, netem10)
	if d.Root() != root || len(rep) != 1 || rep[0].Action != qdisc.Changed || rep[0].Flushed != 0 {
		t.Fatalf("report %+v, root kept %v", rep, d.Root() == root)
	}
	d.Enqueue(5*ms, mk(pool, 0, 3, 100, 0))
	// The new packet (due at 15 ms) overtakes the old ones (50..52 ms):
	// netem sorts by departure time.
	if seqs, next := drainAll(d, 15*ms); !slices.Equal(seqs, []int64{3}) || next != 50*ms {
		t.Errorf("at 15ms: %v, next %v", seqs, next)
	}
	var seqs []int64
	for _, at := range []clock.Time{50 * ms, 51 * ms, 52 * ms} {
		s, _ := drainAll(d, at)
		seqs = append(seqs, s...)
	}
	if !slices.Equal(seqs, []int64{0, 1, 2}) {
		t.Errorf("at 50..52ms: %v", seqs)
	}
	if c := d.Counters(); c.Delay.Max != 50e6 || c.Delay.Min != 10e6 {
		t.Errorf("delays %+v", c.Delay)
	}
	checkBalance(t, d, pool, 0)
}

// Another kind at the root replaces the whole tree: its packets are lost,
// counted as flushed drops.
func TestSetChainReplacesRoot(t *testing.T) {
	d, pool, rec := chainDir(t, []qdisc.Spec{netem50}, nil)
	for i := range 4 {
		d.Enqueue(0, mk(pool, 0, int64(i), 100, 0))
	}
	rep := setChain(t, d, tbf1m)
	want := qdisc.PositionChange{Position: 0, Action: qdisc.Replaced, OldKind: "netem", NewKind: "tbf", Flushed: 4}
	if len(rep) != 1 || rep[0] != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	c := d.Counters()
	if c.Dropped != 4 || c.DroppedByReason[qdisc.ReasonFlushed] != 4 || c.Queued != 0 || rec.flushed() != 4 {
		t.Errorf("counters %+v, %d flushed events", c, rec.flushed())
	}
	if got := kinds(d); !slices.Equal(got, []string{"tbf"}) {
		t.Errorf("chain %v", got)
	}
	d.Enqueue(ms, mk(pool, 0, 4, 100, 0))
	if seqs, _ := drainAll(d, ms); !slices.Equal(seqs, []int64{4}) {
		t.Errorf("through the new tbf: %v", seqs)
	}
	checkBalance(t, d, pool, 0)
}

// A kept parent keeps its own queue when its child is replaced: the
// child's packets are flushed, netem's delayed packets go to the new
// child when they are due.
func TestSetChainReplacesChild(t *testing.T) {
	d, pool, _ := chainDir(t, []qdisc.Spec{netem10, tbf1m}, nil)
	// Three packets reach the tbf at 10 ms: one leaves, two wait.
	for i := range 3 {
		d.Enqueue(0, mk(pool, 0, int64(i), 1500, 0))
	}
	if seqs, _ := drainAll(d, 10*ms); !slices.Equal(seqs, []int64{0}) {
		t.Fatalf("at 10ms: %v", seqs)
	}
	// Two more wait in netem.
	d.Enqueue(10*ms, mk(pool, 0, 3, 1500, 0))
	d.Enqueue(10*ms, mk(pool, 0, 4, 1500, 0))
	rep := setChain(t, d, netem10, fqcodel)
	if len(rep) != 2 || rep[0].Action != qdisc.Changed || rep[1].Action != qdisc.Replaced ||
		rep[1].OldKind != "tbf" || rep[1].NewKind != "fq_codel" || rep[1].Flushed != 2 || rep[0].Flushed != 0 {
		t.Fatalf("report %+v", rep)
	}
	if got := kinds(d); !slices.Equal(got, []string{"netem", "fq_codel"}) {
		t.Errorf("chain %v", got)
	}
	if seqs, _ := drainAll(d, 20*ms); !slices.Equal(seqs, []int64{3, 4}) {
		t.Errorf("netem's packets through the new child: %v", seqs)
	}
	if c := d.Counters(); c.DroppedByReason[qdisc.ReasonFlushed] != 2 {
		t.Errorf("counters %+v", c)
	}
	checkBalance(t, d, pool, 0)
}

// A longer chain adds disciplines under the last kept one; a shorter one
// removes them, and their packets are flushed.
func TestSetChainAddsAndRemoves(t *testing.T) {
	d, pool, _ := chainDir(t, []qdisc.Spec{netem10}, nil)
	d.Enqueue(0, mk(pool, 0, 0, 100, 0))
	rep := setChain(t, d, netem10, pfifo)
	if len(rep) != 2 || rep[1].Action != qdisc.Added || rep[1].NewKind != "pfifo" || rep[1].OldKind != "" {
		t.Fatalf("report %+v", rep)
	}
	if seqs, _ := drainAll(d, 10*ms); !slices.Equal(seqs, []int64{0}) {
		t.Errorf("through the added pfifo: %v", seqs)
	}
	if s := qdisc.Positions(d.Root())[1].Stats(); s.Packets != 1 {
		t.Errorf("pfifo stats %+v: the packet did not go through it", s)
	}

	// Fill the pfifo behind a closed gate: a netem child is released when
	// netem's own packets are due, so put a tbf under netem and block it.
	d2, pool2, _ := chainDir(t, []qdisc.Spec{netem10, tbf1m, pfifo}, nil)
	for i := range 3 {
		d2.Enqueue(0, mk(pool2, 0, int64(i), 1500, 0))
	}
	drainAll(d2, 10*ms) // one leaves, two wait in tbf's pfifo
	rep = setChain(t, d2, netem10)
	want := []qdisc.Action{qdisc.Changed, qdisc.Removed, qdisc.Removed}
	if len(rep) != 3 || rep[0].Action != want[0] || rep[1].Action != want[1] || rep[2].Action != want[2] ||
		rep[1].Flushed != 0 || rep[2].Flushed != 2 {
		t.Fatalf("report %+v", rep)
	}
	if got := kinds(d2); !slices.Equal(got, []string{"netem"}) {
		t.Errorf("chain %v", got)
	}
	checkBalance(t, d2, pool2, 0)
	checkBalance(t, d, pool, 0)
}

// tbf's default bfifo is no position: adding a child replaces it (its
// packets count against the added position), removing the child brings a
// new default bfifo of tbf's limit back.
func TestSetChainTBFDefaultChild(t *testing.T) {
	d, pool, _ := chainDir(t, []qdisc.Spec{tbf1m}, nil)
	for i := range 3 {
		d.Enqueue(0, mk(pool, 0, int64(i), 1500, 0))
	}
	drainAll(d, 0) // one leaves on the full bucket, two wait in the bfifo
	if got := kinds(d); !slices.Equal(got, []string{"tbf"}) {
		t.Fatalf("chain %v: the default bfifo is no position", got)
	}
	rep := setChain(t, d, qdisc.TBFConfig{Rate: 125000, Burst: 1514}, fqcodel)
	if len(rep) != 2 || rep[1].Action != qdisc.Added || rep[1].Flushed != 2 {
		t.Fatalf("report %+v", rep)
	}
	d.Enqueue(ms, mk(pool, 0, 3, 1500, 0))
	if got := kinds(d); !slices.Equal(got, []string{"tbf", "fq_codel"}) || d.Len() != 1 {
		t.Fatalf("chain %v, %d queued", got, d.Len())
	}
	rep = setChain(t, d, qdisc.TBFConfig{Rate: 125000, Burst: 1514, Limit: 3000})
	if len(rep) != 2 || rep[1].Action != qdisc.Removed || rep[1].Flushed != 1 {
		t.Fatalf("report %+v", rep)
	}
	child := d.Root().Child()
	if child == nil || child.Kind() != "bfifo" || child.Config().(qdisc.FifoConfig).Limit != 3000 {
		t.Fatalf("tbf's child after removal: %v", child)
	}
	checkBalance(t, d, pool, 0)
}

// From a chain to a direct path and back. Without a trace the direct queue
// is empty between calls; with one it is mahimahi's queue, flushed when a
// chain replaces it, while packets on the trace's wire stay.
func TestSetChainDirectPath(t *testing.T) {
	d, pool, _ := chainDir(t, []qdisc.Spec{netem50}, nil)
	d.Enqueue(0, mk(pool, 0, 0, 100, 0))
	rep := setChain(t, d)
	if d.Root() != nil || len(rep) != 1 || rep[0].Action != qdisc.Removed || rep[0].Flushed != 1 {
		t.Fatalf("to direct: report %+v", rep)
	}
	d.Enqueue(ms, mk(pool, 0, 1, 100, 0))
	if seqs, _ := drainAll(d, ms); !slices.Equal(seqs, []int64{1}) {
		t.Errorf("direct: %v", seqs)
	}
	if rep := setChain(t, d); len(rep) != 0 {
		t.Errorf("direct to direct: %+v", rep)
	}
	checkBalance(t, d, pool, 0)

	// A 1500-byte opportunity every ms: a 3000-byte packet spans two.
	dt, poolT, _ := chainDir(t, nil, everyMs(t))
	dt.Enqueue(0, mk(poolT, 0, 0, 3000, 0))
	dt.Enqueue(0, mk(poolT, 0, 1, 100, 0))
	dt.Enqueue(0, mk(poolT, 0, 2, 100, 0))
	drainAll(dt, ms) // packet 0 is half sent
	rep = setChain(t, dt, netem10)
	if len(rep) != 1 || rep[0].Action != qdisc.Added || rep[0].Flushed != 2 {
		t.Fatalf("to netem: report %+v", rep)
	}
	if seqs, _ := drainAll(dt, 2*ms); !slices.Equal(seqs, []int64{0}) {
		t.Errorf("the packet on the wire: %v", seqs)
	}
	checkBalance(t, dt, poolT, 0)
}

// Everything is checked before anything changes: a bad position, or a
// change the kernel refuses (fq_codel's flows), leaves the whole chain as
// it was.
func TestSetChainErrorChangesNothing(t *testing.T) {
	d, pool, _ := chainDir(t, []qdisc.Spec{netem50, fqcodel}, nil)
	d.Enqueue(0, mk(pool, 0, 0, 100, 0))
	before := qdisc.Positions(d.Root())
	for _, tc := range []struct {
		chain []qdisc.Spec
		want  string
	}{
		{[]qdisc.Spec{netem10, qdisc.FQCoDelConfig{Flows: 2048}}, "flows"},
		{[]qdisc.Spec{netem10, qdisc.CoDelConfig{Limit: -1}}, "limit"},
		{[]qdisc.Spec{netem10, pfifo, pfifo}, "child"},
		{[]qdisc.Spec{netem10, qdisc.TBFConfig{Rate: 125000}}, "burst"},
	} {
		if err := d.CheckChain(tc.chain); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckChain(%v): %v, want an error naming %q", tc.chain, err, tc.want)
		}
		_, err := d.SetChain(tc.chain)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetChain(%v): %v, want an error naming %q", tc.chain, err, tc.want)
		}
		after := qdisc.Positions(d.Root())
		if !slices.Equal(before, after) || after[0].Config().(qdisc.NetemConfig).Delay != 50*time.Millisecond || d.Len() != 1 {
			t.Fatalf("%v changed the chain", tc.chain)
		}
	}
	if err := d.CheckChain([]qdisc.Spec{netem10, fqcodel}); err != nil {
		t.Errorf("CheckChain of a good chain: %v", err)
	}
	checkBalance(t, d, pool, 0)
}

// The report prints one line per position, numbered from 1.
func TestChainChangeString(t *testing.T) {
	rep := qdisc.ChainChange{
		{Position: 0, Action: qdisc.Changed, OldKind: "netem", NewKind: "netem", Dropped: 3},
		{Position: 1, Action: qdisc.Replaced, OldKind: "tbf", NewKind: "fq_codel", Flushed: 1},
		{Position: 2, Action: qdisc.Removed, OldKind: "pfifo", Flushed: 12},
	}
	want := "1 netem: changed, 3 packets dropped to the new limit\n2 tbf -> fq_codel: replaced, 1 packet flushed\n3 pfifo: removed, 12 packets flushed"
	if got := rep.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
