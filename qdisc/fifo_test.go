package qdisc

import (
	"testing"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

func newTestFifo(t *testing.T, cfg FifoConfig, env *Env) *Fifo {
	t.Helper()
	f, err := NewFifo(cfg, env)
	if err != nil {
		t.Fatalf("NewFifo(%+v): %v", cfg, err)
	}
	return f
}

func TestFifoDefaults(t *testing.T) {
	cases := []struct {
		cfg  FifoConfig
		env  Env
		kind string
		want int
	}{
		{FifoConfig{}, Env{}, "pfifo", 1000},
		{FifoConfig{Variant: "pfifo"}, Env{TxQueueLen: 500}, "pfifo", 500},
		// bfifo's default is txqueuelen·psched_mtu: 1514 on Ethernet (the
		// default framing), the MTU alone on a TUN device.
		{FifoConfig{Variant: "bfifo"}, Env{}, "bfifo", 1000 * 1514},
		{FifoConfig{Variant: "bfifo"}, Env{MTU: 9000}, "bfifo", 1000 * 9014},
		{FifoConfig{Variant: "bfifo"}, Env{TxQueueLen: 500, Framing: FramingIP}, "bfifo", 500 * 1500},
		{FifoConfig{Variant: "pfifo_head_drop"}, Env{TxQueueLen: 10}, "pfifo_head_drop", 10},
		{FifoConfig{Variant: "bfifo", Limit: 3000}, Env{}, "bfifo", 3000},
	}
	for _, c := range cases {
		env := c.env
		f, err := NewFifo(c.cfg, &env)
		if err != nil {
			t.Fatalf("NewFifo(%+v): %v", c.cfg, err)
		}
		if f.Kind() != c.kind || f.Limit() != c.want {
			t.Errorf("NewFifo(%+v, %+v): kind %s limit %d, want %s %d", c.cfg, c.env, f.Kind(), f.Limit(), c.kind, c.want)
		}
		if got := f.Config().(FifoConfig); got.Limit != c.want || got.Variant != c.kind {
			t.Errorf("Config() = %+v, want limit %d variant %s", got, c.want, c.kind)
		}
	}
	for _, bad := range []FifoConfig{{Variant: "fifo"}, {Variant: "pfifo", Limit: -1}} {
		if _, err := NewFifo(bad, &Env{}); err == nil {
			t.Errorf("NewFifo(%+v) accepted", bad)
		}
	}
	for _, env := range []Env{{MTU: -1}, {MTU: 67}, {TxQueueLen: -1}} {
		if _, err := NewFifo(FifoConfig{Variant: "bfifo", Limit: 100}, &env); err == nil {
			t.Errorf("NewFifo accepted the device %+v", env)
		}
	}
}

func TestPfifoTailDrop(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	f := newTestFifo(t, FifoConfig{Variant: "pfifo"}, &Env{Observer: rec, TxQueueLen: 5})
	for i := range 7 {
		v := f.Enqueue(0, coretest.UDP(pool, 100+i, 1000, 0, int64(i)))
		if want := map[bool]Verdict{true: Queued, false: Dropped}[i < 5]; v != want {
			t.Errorf("packet %d: verdict %v, want %v", i, v, want)
		}
	}
	// Backlog and Sent count each packet's Ethernet header too.
	if f.Len() != 5 || f.Backlog() != 100+101+102+103+104+5*14 {
		t.Errorf("Len %d Backlog %d, want 5 and %d", f.Len(), f.Backlog(), 580)
	}
	if len(rec.drops) != 2 || rec.drops[0].seq != 5 || rec.drops[1].seq != 6 || rec.count(ReasonLimit) != 2 {
		t.Errorf("drops %+v, want packets 5 and 6 for limit", rec.drops)
	}
	if p, _ := f.Peek(0); p == nil || p.Seq != 0 {
		t.Errorf("Peek returned %v, want packet 0", p)
	}
	deps := tqDrain(t, f, 0, clock.Never-1)
	for i, d := range deps {
		if d.seq != int64(i) || d.t != 0 {
			t.Errorf("departure %d: %+v, want seq %d at 0", i, d, i)
		}
	}
	s := f.Stats()
	if s.Packets != 5 || s.Bytes != 580 || s.Drops != 2 || s.DropsByReason[ReasonLimit] != 2 || s.Qlen != 0 {
		t.Errorf("Stats %+v", s)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestBfifoByteLimit(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	f := newTestFifo(t, FifoConfig{Variant: "bfifo", Limit: 3000}, &Env{Observer: rec})
	// On Ethernet every packet counts 14 bytes more: 1514 + 1414 = 2928;
	// 72 more fits exactly (backlog+len <= limit), 73 does not, and after
	// that even the smallest packet does not.
	sizes := []int{1500, 1400, 59, 58, 28}
	want := []Verdict{Queued, Queued, Dropped, Queued, Dropped}
	for i, n := range sizes {
		if v := f.Enqueue(0, coretest.UDP(pool, n, 1000, 0, int64(i))); v != want[i] {
			t.Errorf("packet %d (%d B) at backlog %d: %v, want %v", i, n, f.Backlog(), v, want[i])
		}
	}
	if f.Backlog() != 3000 || f.Len() != 3 {
		t.Errorf("Backlog %d Len %d, want 3000 and 3", f.Backlog(), f.Len())
	}
	if rec.count(ReasonLimit) != 2 {
		t.Errorf("drops %+v", rec.drops)
	}
	tqDrain(t, f, 0, 0)
	coretest.CheckLive(t, pool, 0)
}

func TestPfifoHeadDrop(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	f := newTestFifo(t, FifoConfig{Variant: "pfifo_head_drop", Limit: 3}, &Env{Observer: rec})
	for i := range 5 {
		v := f.Enqueue(clock.Time(i), coretest.UDP(pool, 200, 1000, 0, int64(i)))
		if want := map[bool]Verdict{true: Queued, false: Congested}[i < 3]; v != want {
			t.Errorf("packet %d: %v, want %v", i, v, want)
		}
	}
	if len(rec.drops) != 2 || rec.drops[0].seq != 0 || rec.drops[1].seq != 1 || rec.count(ReasonHeadDrop) != 2 {
		t.Errorf("drops %+v, want the two oldest for head_drop", rec.drops)
	}
	deps := tqDrain(t, f, 10, 10)
	if len(deps) != 3 || deps[0].seq != 2 || deps[1].seq != 3 || deps[2].seq != 4 {
		t.Errorf("departures %+v, want 2, 3, 4", deps)
	}
	if s := f.Stats(); s.Drops != 2 || s.DropsByReason[ReasonHeadDrop] != 2 {
		t.Errorf("Stats %+v", s)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestFifoBuild(t *testing.T) {
	env := &Env{TxQueueLen: 7}
	q, err := Build([]Spec{FifoConfig{Variant: "bfifo"}}, env)
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind() != "bfifo" || q.Config().(FifoConfig).Limit != 7*1514 || env.Root != q {
		t.Errorf("Build bfifo: kind %s config %+v", q.Kind(), q.Config())
	}
	if _, err := Build([]Spec{FifoConfig{}, PIEConfig{}}, env); err == nil {
		t.Error("Build accepted a child under pfifo")
	}
	if q, _ := Build([]Spec{FifoConfig{Variant: "pfifo_head_drop"}}, env); q == nil || q.Kind() != "pfifo_head_drop" {
		t.Errorf("Build pfifo_head_drop: %v", q)
	}
}
