package link_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

const (
	ms = clock.Time(time.Millisecond)
	us = clock.Time(time.Microsecond)
)

// tx is the time a 1500-byte IP packet (1514 bytes on Ethernet) takes at
// 10 Mbit/s: 1514·8/10⁷ s = 1.2112 ms, which tbf's token arithmetic gets
// exactly (800 ns per byte).
const tx = 1211200

func chain(t testing.TB, s string) []qdisc.Spec {
	t.Helper()
	c, err := tcspec.ParseChain(s, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// send is a packet for a test to offer: at t, by ingress port in, of
// flow f with sequence number seq, 1500 bytes unless size says.
type send struct {
	t    clock.Time
	in   int
	f    int32
	seq  int64
	size int
}

// left is a packet the path released.
type left struct {
	f   int32
	seq int64
	t   clock.Time
	out int
	dup bool
}

func offer(p *link.Path, pool *packet.Pool, s send) {
	size := s.size
	if size == 0 {
		size = 1500
	}
	pk := coretest.UDP(pool, size, 1000+uint16(s.f), 0, s.seq)
	pk.Flow = s.f
	p.Enqueue(s.t, s.in, 0, pk)
}

// onTime drives p as the simulator does: at each time, the packets sent
// then, then everything due; it returns what left, in order.
func onTime(p *link.Path, pool *packet.Pool, sends []send, end clock.Time) []left {
	var out []left
	next := clock.Never
	for {
		t := next
		if len(sends) > 0 {
			t = min(t, sends[0].t)
		}
		if t >= end {
			return out
		}
		for len(sends) > 0 && sends[0].t == t {
			offer(p, pool, sends[0])
			sends = sends[1:]
		}
		for {
			pk, port, at := p.Dequeue(t)
			if pk == nil {
				next = max(at, t+1)
				break
			}
			out = append(out, left{pk.Flow, pk.Seq, at, port, pk.Dup})
			pk.Free()
		}
	}
}

// late offers every packet at its time but asks for nothing until late,
// as a caller that came late would, and then takes everything due.
func late(p *link.Path, pool *packet.Pool, sends []send, at clock.Time) []left {
	for _, s := range sends {
		offer(p, pool, s)
	}
	// Every packet is accounted for, those the path holds for the late
	// caller included.
	if c := p.Counters(); c.Sent+c.Duplicated != c.Delivered+c.Dropped+c.Queued || int(c.Queued) != p.Len() {
		panic(fmt.Sprintf("end to end %+v, Len %d", c, p.Len()))
	}
	var out []left
	for {
		pk, port, t := p.DequeueLate(at, at)
		if pk == nil {
			return out
		}
		out = append(out, left{pk.Flow, pk.Seq, t, port, pk.Dup})
		pk.Free()
	}
}

// arrivals records the packets entering a link and dropped in it.
type arrivals struct{ in, drop []left }

func (a *arrivals) Event(e *link.Event) {
	l := left{f: e.Packet.Flow, seq: e.Packet.Seq, t: e.Time}
	switch e.Kind {
	case link.Enqueue:
		a.in = append(a.in, l)
	case link.Drop:
		a.drop = append(a.drop, l)
	}
}

// dumbbell builds a path from two clients (ingress ports 0 and 1, with
// access links c1 and c2; "" for none) through bottleneck to one server
// (egress access s1, "" for none).
func dumbbell(t *testing.T, bottleneck, c1, c2, s1 string, hook link.Hook) (*link.Path, *packet.Pool) {
	t.Helper()
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	access := func(name, c string) *link.Config {
		if c == "" {
			return nil
		}
		return &link.Config{Name: name, Chain: chain(t, c), Env: qdisc.Env{Pool: pool}, KeepDelays: true}
	}
	p, err := link.NewPath(link.PathConfig{
		Name:       "up",
		Bottleneck: link.Config{Name: "up", Chain: chain(t, bottleneck), Env: qdisc.Env{Pool: pool}, Hook: hook, KeepDelays: true},
		In:         []*link.Config{access("up:c1", c1), access("up:c2", c2)},
		Out:        []*link.Config{access("up:s1", s1)},
		PerFlow:    true, KeepDelays: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, pool
}

// TestPathAccessDelays sends from two clients, whose access links delay
// 10 ms and 40 ms, through a 10 Mbit/s tbf of one packet's burst to a
// server 5 ms behind it. c2 sends A0..A2 at 0, c1 sends B0, B1 at 29 ms
// and C0 at 60 ms. The bottleneck receives the Bs at 39 ms and the As at
// 40 ms, in the order they leave their access links, not the order they
// were sent; it sends B0 at once (its bucket is full) and the others one
// transmission time (1.2112 ms) apart, from 39 ms: each packet's delay is
// its access delay + its wait in the bottleneck + 5 ms. C0 finds the
// bottleneck idle again. A caller that comes late (once, at 100 ms) gets
// the same times.
func TestPathAccessDelays(t *testing.T) {
	sends := []send{
		{t: 0, in: 1, f: 1, seq: 0}, {t: 0, in: 1, f: 1, seq: 1}, {t: 0, in: 1, f: 1, seq: 2},
		{t: 29 * ms, in: 0, f: 0, seq: 0}, {t: 29 * ms, in: 0, f: 0, seq: 1},
		{t: 60 * ms, in: 0, f: 0, seq: 2},
	}
	want := []left{
		{f: 0, seq: 0, t: 44 * ms}, {f: 0, seq: 1, t: 44*ms + tx},
		{f: 1, seq: 0, t: 44*ms + 2*tx}, {f: 1, seq: 1, t: 44*ms + 3*tx}, {f: 1, seq: 2, t: 44*ms + 4*tx},
		{f: 0, seq: 2, t: 75 * ms},
	}
	wantIn := []left{{0, 0, 39 * ms, 0, false}, {0, 1, 39 * ms, 0, false},
		{1, 0, 40 * ms, 0, false}, {1, 1, 40 * ms, 0, false}, {1, 2, 40 * ms, 0, false}, {0, 2, 70 * ms, 0, false}}
	for _, mode := range []string{"on time", "late"} {
		t.Run(mode, func(t *testing.T) {
			rec := &arrivals{}
			p, pool := dumbbell(t, "tbf rate 10mbit burst 1514 limit 100000", "netem delay 10ms", "netem delay 40ms", "netem delay 5ms", rec)
			var got []left
			if mode == "on time" {
				got = onTime(p, pool, sends, clock.Time(time.Second))
			} else {
				got = late(p, pool, sends, 100*ms)
			}
			if !slices.Equal(got, want) {
				t.Errorf("left\n got %v\nwant %v", got, want)
			}
			if !slices.Equal(rec.in, wantIn) {
				t.Errorf("bottleneck received\n got %v\nwant %v", rec.in, wantIn)
			}
			coretest.CheckLive(t, pool, 0)
			// Each stage's delays: the access links' and the server's
			// constant; the bottleneck's waits 0, 1.2112, 1.4224, 2.6336,
			// 3.8448 ms and 0 for C0.
			stage := func(pl link.Place, port int) link.Delay {
				return p.Link(link.Stage{Place: pl, Port: port}).Counters().Delay
			}
			checkDelay(t, "c1 access", stage(link.Ingress, 0), 3, 10*ms, 10*ms, 10*ms)
			checkDelay(t, "c2 access", stage(link.Ingress, 1), 3, 40*ms, 40*ms, 40*ms)
			checkDelay(t, "s1 access", stage(link.Egress, 0), 6, 5*ms, 5*ms, 5*ms)
			checkDelay(t, "bottleneck", stage(link.Bottleneck, 0), 6, 0, (tx+2*tx-ms+3*tx-ms+4*tx-ms)/6, 4*tx-ms)
			// End to end: on time, access + bottleneck wait + 5 ms
			// (15, 16.2112, 46.4224, 47.6336, 48.8448 and 15 ms); late,
			// to 100 ms, when the caller took them.
			e2e, c1, c2 := p.Counters(), p.PortCounters(link.Ingress, 0), p.PortCounters(link.Ingress, 1)
			if mode == "on time" {
				checkDelay(t, "end to end", e2e.Delay, 6, 15*ms, (15*ms+(15*ms+tx)+(44*ms+2*tx)+(44*ms+3*tx)+(44*ms+4*tx)+15*ms)/6, 44*ms+4*tx)
				checkDelay(t, "c1 end to end", c1.Delay, 3, 15*ms, (45*ms+tx)/3, 15*ms+tx)
				checkDelay(t, "c2 end to end", c2.Delay, 3, 44*ms+2*tx, 44*ms+3*tx, 44*ms+4*tx)
			} else {
				checkDelay(t, "end to end", e2e.Delay, 6, 40*ms, (71*ms*2+300*ms+40*ms)/6, 100*ms)
			}
			if e2e.Sent != 6 || e2e.Delivered != 6 || e2e.Queued != 0 || c1.Sent != 3 || c2.Delivered != 3 {
				t.Errorf("end to end %+v\nc1 %+v\nc2 %+v", e2e, c1, c2)
			}
			if s1 := p.PortCounters(link.Egress, 0); s1.Delivered != 6 || s1.BytesOut != 6*1514 {
				t.Errorf("s1 %+v", s1)
			}
		})
	}
}

// checkDelay compares a delay summary's count, minimum, mean and maximum
// with the figures derived by hand, to the nanosecond.
func checkDelay(t *testing.T, what string, d link.Delay, n uint64, lo, mean, hi clock.Time) {
	t.Helper()
	near := func(a float64, b clock.Time) bool { return a > float64(b)-1 && a < float64(b)+1 }
	if d.N != n || !near(d.Min, lo) || !near(d.Mean, mean) || !near(d.Max, hi) {
		t.Errorf("%s delay: n %d min %.0f mean %.0f max %.0f; want n %d min %d mean %d max %d", what, d.N, d.Min, d.Mean, d.Max, n, lo, mean, hi)
	}
}

// TestPathDropsFallOnArrivals fills a bottleneck of three packets (a
// 4542-byte bfifo: three 1514-byte packets, the one tbf is about to send
// included) from two clients 10 ms and 40 ms away. At 40 ms c1's X0..X4
// arrive: X0 leaves at once, X1 and X2 wait, X3 and X4 find it full. At
// 41 ms c2's Y0 and Y1 (sent at 1 ms) arrive before X1 leaves (41.2112
// ms): Y0 fills it, Y1 is dropped. c1's X5 (sent at 32 ms) fills it at 42
// ms and c2's Y2 (sent at 2.2 ms) finds it full at 42.2 ms. The drops
// fall on whatever arrives when the queue is full, from either host.
func TestPathDropsFallOnArrivals(t *testing.T) {
	sends := []send{
		{t: 1 * ms, in: 1, f: 1, seq: 0}, {t: 1 * ms, in: 1, f: 1, seq: 1}, {t: 2200 * us, in: 1, f: 1, seq: 2},
		{t: 30 * ms, in: 0, f: 0, seq: 0}, {t: 30 * ms, in: 0, f: 0, seq: 1}, {t: 30 * ms, in: 0, f: 0, seq: 2},
		{t: 30 * ms, in: 0, f: 0, seq: 3}, {t: 30 * ms, in: 0, f: 0, seq: 4}, {t: 32 * ms, in: 0, f: 0, seq: 5},
	}
	for _, mode := range []string{"on time", "late"} {
		t.Run(mode, func(t *testing.T) {
			rec := &arrivals{}
			p, pool := dumbbell(t, "tbf rate 10mbit burst 1514 limit 4542", "netem delay 10ms", "netem delay 40ms", "", rec)
			var got []left
			if mode == "on time" {
				got = onTime(p, pool, sends, clock.Time(time.Second))
			} else {
				got = late(p, pool, sends, 100*ms)
			}
			want := []left{{f: 0, seq: 0, t: 40 * ms}, {f: 0, seq: 1, t: 40*ms + tx}, {f: 0, seq: 2, t: 40*ms + 2*tx},
				{f: 1, seq: 0, t: 40*ms + 3*tx}, {f: 0, seq: 5, t: 40*ms + 4*tx}}
			if !slices.Equal(got, want) {
				t.Errorf("left\n got %v\nwant %v", got, want)
			}
			wantDrops := []left{{f: 0, seq: 3, t: 40 * ms}, {f: 0, seq: 4, t: 40 * ms}, {f: 1, seq: 1, t: 41 * ms}, {f: 1, seq: 2, t: 42200 * us}}
			if !slices.Equal(rec.drop, wantDrops) {
				t.Errorf("drops\n got %v\nwant %v", rec.drop, wantDrops)
			}
			e2e, c1, c2 := p.Counters(), p.PortCounters(link.Ingress, 0), p.PortCounters(link.Ingress, 1)
			if e2e.Dropped != 4 || e2e.DroppedByReason[qdisc.ReasonLimit] != 4 || e2e.Delivered != 5 || e2e.Sent != 9 {
				t.Errorf("end to end %+v", e2e)
			}
			if c1.Sent != 6 || c1.Dropped != 2 || c1.Delivered != 4 || c2.Sent != 3 || c2.Dropped != 2 || c2.Delivered != 1 {
				t.Errorf("c1 %+v\nc2 %+v", c1, c2)
			}
			fc := p.FlowCounters()
			if fc[0].Dropped != 2 || fc[1].Dropped != 2 || fc[1].Delivered != 1 {
				t.Errorf("flows %+v", fc)
			}
			coretest.CheckLive(t, pool, 0)
		})
	}
}

// TestPathLateCaller checks that a packet offered late does not overtake
// what left an access link before it came: c2's Y0 and Y1, sent at 0,
// reach the bottleneck (a 10 Mbit/s tbf of one packet's burst) at 40 ms
// through c2's 40 ms access link; c1, without one, offers X0 at 40.5 ms,
// straight into the bottleneck, which is still sending Y1 then: X0 waits
// until 40 ms + 2 transmission times. A caller that takes nothing until
// 100 ms gets the same.
func TestPathLateCaller(t *testing.T) {
	sends := []send{{t: 0, in: 1, f: 1, seq: 0}, {t: 0, in: 1, f: 1, seq: 1}, {t: 40500 * us, in: 0, f: 0, seq: 0}}
	want := []left{{f: 1, seq: 0, t: 40 * ms}, {f: 1, seq: 1, t: 40*ms + tx}, {f: 0, seq: 0, t: 40*ms + 2*tx}}
	wantIn := []left{{f: 1, seq: 0, t: 40 * ms}, {f: 1, seq: 1, t: 40 * ms}, {f: 0, seq: 0, t: 40500 * us}}
	for _, mode := range []string{"on time", "late"} {
		rec := &arrivals{}
		p, pool := dumbbell(t, "tbf rate 10mbit burst 1514 limit 100000", "", "netem delay 40ms", "", rec)
		var got []left
		if mode == "on time" {
			got = onTime(p, pool, sends, clock.Time(time.Second))
		} else {
			got = late(p, pool, sends, 100*ms)
		}
		if !slices.Equal(got, want) || !slices.Equal(rec.in, wantIn) {
			t.Errorf("%s: left %v, want %v; bottleneck received %v, want %v", mode, got, want, rec.in, wantIn)
		}
		coretest.CheckLive(t, pool, 0)
	}
}

// TestPathIsADirection checks that a path of the bottleneck alone behaves
// as the Direction does, packet for packet, with random losses,
// duplicates, jitter and shaping: both between one port and one (the
// path passes straight through) and from two ingress ports without access
// links (its stages merge, with one stage).
func TestPathIsADirection(t *testing.T) {
	for _, c := range []string{
		"netem delay 20ms 5ms loss 3% duplicate 3% limit 50; tbf rate 8mbit burst 4k limit 20000",
		"tbf rate 10mbit burst 32k latency 20ms; fq_codel target 2ms interval 20ms",
	} {
		rng := rand.New(rand.NewPCG(7, 9))
		var sends []send
		for at, k := clock.Time(0), int64(0); at < 2*clock.Time(time.Second); k++ {
			at += clock.Time(rng.ExpFloat64() * float64(400*us))
			sends = append(sends, send{t: at, f: int32(k % 3), seq: k, size: 100 + rng.IntN(1401)})
		}
		end := 3 * clock.Time(time.Second)
		cfg := func(pool *packet.Pool) link.Config {
			return link.Config{Name: "up", Chain: chain(t, c), Env: qdisc.Env{Pool: pool, Seed: 11}, PerFlow: true, KeepDelays: true}
		}

		// The Direction, driven as onTime drives a path.
		pool := packet.NewPool(2048, packet.DefaultHeadroom)
		d, err := link.New(cfg(pool))
		if err != nil {
			t.Fatal(err)
		}
		var want []left
		next, rest := clock.Never, sends
		for {
			at := next
			if len(rest) > 0 {
				at = min(at, rest[0].t)
			}
			if at >= end {
				break
			}
			for len(rest) > 0 && rest[0].t == at {
				pk := coretest.UDP(pool, rest[0].size, 1000+uint16(rest[0].f), 0, rest[0].seq)
				pk.Flow = rest[0].f
				d.Enqueue(at, pk)
				rest = rest[1:]
			}
			for {
				pk, n := d.Dequeue(at)
				if pk == nil {
					next = max(n, at+1)
					break
				}
				want = append(want, left{pk.Flow, pk.Seq, at, 0, pk.Dup})
				pk.Free()
			}
		}
		if len(want) < 1000 {
			t.Fatalf("%s: only %d packets left the direction", c, len(want))
		}

		for _, ports := range []int{1, 2} {
			pool := packet.NewPool(2048, packet.DefaultHeadroom)
			p, err := link.NewPath(link.PathConfig{Name: "up", Bottleneck: cfg(pool), In: make([]*link.Config, ports), Out: make([]*link.Config, 1), PerFlow: true, KeepDelays: true})
			if err != nil {
				t.Fatal(err)
			}
			ss := slices.Clone(sends)
			for i := range ss {
				ss[i].in = int(ss[i].seq) % ports
			}
			got := onTime(p, pool, ss, end)
			if !slices.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("%s, %d ports: %d packets left, the direction's %d; first difference at %d", c, ports, len(got), len(want), i)
				continue
			}
			if b := p.Link(link.Stage{Place: link.Bottleneck}).Counters(); b != d.Counters() {
				t.Errorf("%s, %d ports: bottleneck %+v\ndirection %+v", c, ports, b, d.Counters())
			}
			// With no access links, end to end is the bottleneck.
			if e := p.Counters(); e != d.Counters() {
				t.Errorf("%s, %d ports: end to end %+v\ndirection %+v", c, ports, e, d.Counters())
			}
			df, pf := d.FlowCounters(), p.FlowCounters()
			for f := range int32(3) {
				if df[f] != pf[f] {
					t.Errorf("%s, %d ports: flow %d %+v\ndirection %+v", c, ports, f, pf[f], df[f])
				}
			}
			if e := p.Counters(); e.Dropped == 0 {
				t.Errorf("%s: nothing dropped: the test shows less than it should", c)
			}
		}
	}
}

// TestPathSetChain changes an access link's chain at run time: a tbf of
// 1 Mbit/s holds the second of two packets for 12.112 ms (1514 bytes at
// 1 Mbit/s); made 100 Mbit/s at 1 ms with its bucket refilled, as tc
// change does, it lets it go at 1 ms.
func TestPathSetChain(t *testing.T) {
	p, pool := dumbbell(t, "", "tbf rate 1mbit burst 1514 limit 100000", "", "", nil)
	offer(p, pool, send{t: 0, in: 0, f: 0, seq: 0})
	offer(p, pool, send{t: 0, in: 0, f: 0, seq: 1})
	if pk, _, at := p.Dequeue(0); pk == nil || at != 0 {
		t.Fatalf("Dequeue(0) = %v at %v", pk, at)
	} else {
		pk.Free()
	}
	if pk, _, at := p.Dequeue(ms); pk != nil || at != 12112*us {
		t.Fatalf("Dequeue(1ms) = %v, next %v; want nil, 12.112ms", pk, at)
	}
	c1 := link.Stage{Place: link.Ingress, Port: 0}
	if _, err := p.SetChain(c1, chain(t, "tbf rate 100mbit burst 1514 limit 100000")); err != nil {
		t.Fatal(err)
	}
	pk, _, at := p.Dequeue(ms)
	if pk == nil || pk.Seq != 1 || at != ms {
		t.Fatalf("after the change Dequeue(1ms) = %v at %v; want packet 1 at 1ms", pk, at)
	}
	pk.Free()
	for _, st := range []link.Stage{{Place: link.Ingress, Port: 1}, {Place: link.Egress, Port: 0}, {Place: link.Egress, Port: 3}} {
		if _, err := p.SetChain(st, nil); err == nil || !strings.Contains(err.Error(), "port") {
			t.Errorf("SetChain(%v) = %v; want an error naming the port", st, err)
		}
	}
	if err := p.CheckChain(c1, chain(t, "netem delay 1ms")); err != nil {
		t.Errorf("CheckChain: %v", err)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestNewPathPorts(t *testing.T) {
	for _, n := range [][2]int{{0, 1}, {1, 0}, {link.MaxPorts + 1, 1}} {
		_, err := link.NewPath(link.PathConfig{Name: "up", In: make([]*link.Config, n[0]), Out: make([]*link.Config, n[1])})
		if err == nil || !strings.Contains(err.Error(), "give 1 to") {
			t.Errorf("%d→%d ports: %v", n[0], n[1], err)
		}
	}
}

func TestParseHost(t *testing.T) {
	for s, want := range map[string]link.Host{"c1": {N: 1}, "s16": {Server: true, N: 16}, "C3": {N: 3}} {
		if h, err := link.ParseHost(s); err != nil || h != want {
			t.Errorf("ParseHost(%q) = %v, %v", s, h, err)
		}
	}
	for _, s := range []string{"c17", "c0", "x1", "c", "c+1", "c1x", ""} {
		if _, err := link.ParseHost(s); err == nil {
			t.Errorf("ParseHost(%q) accepted", s)
		}
	}
	h, text, err := link.ParseAccess(" c2 = netem delay 40ms")
	if err != nil || h != (link.Host{N: 2}) || text != "netem delay 40ms" {
		t.Errorf("ParseAccess = %v %q %v", h, text, err)
	}
	if err := (link.Host{N: 5}).Check(4, 1); err == nil || !strings.Contains(err.Error(), "c1..c4") {
		t.Errorf("c5 of 4 clients: %v", err)
	}
	if err := (link.Host{Server: true, N: 2}).Check(4, 1); err == nil || !strings.Contains(err.Error(), "one server (s1)") {
		t.Errorf("s2 of 1 server: %v", err)
	}
}

// BenchmarkPath compares a path with a plain Direction of the same chain:
// one packet in and one out per iteration, at 1 ms steps.
func BenchmarkPath(b *testing.B) {
	const c = "netem delay 1ms limit 100000"
	for _, bc := range []struct {
		name   string
		ports  int
		access bool
	}{{"direction", 0, false}, {"path-1x1", 1, false}, {"path-2x1", 2, false}, {"path-2x1-access", 2, true}} {
		b.Run(bc.name, func(b *testing.B) {
			pool := packet.NewPool(2048, packet.DefaultHeadroom)
			cfg := link.Config{Name: "up", Chain: chain(b, c), Env: qdisc.Env{Pool: pool}}
			var enq func(clock.Time, int, *packet.Packet)
			var deq func(clock.Time) *packet.Packet
			if bc.ports == 0 {
				d, err := link.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				enq = func(t clock.Time, _ int, pk *packet.Packet) { d.Enqueue(t, pk) }
				deq = func(t clock.Time) *packet.Packet { pk, _ := d.Dequeue(t); return pk }
			} else {
				pc := link.PathConfig{Name: "up", Bottleneck: cfg, In: make([]*link.Config, bc.ports), Out: make([]*link.Config, 1)}
				if bc.access {
					pc.In[1] = &link.Config{Name: "up:c2", Chain: chain(b, c), Env: qdisc.Env{Pool: pool}}
				}
				p, err := link.NewPath(pc)
				if err != nil {
					b.Fatal(err)
				}
				enq = func(t clock.Time, in int, pk *packet.Packet) { p.Enqueue(t, in, 0, pk) }
				deq = func(t clock.Time) *packet.Packet { pk, _, _ := p.Dequeue(t); return pk }
			}
			b.ReportAllocs()
			b.ResetTimer()
			now := clock.Time(0)
			for i := range b.N {
				pk := pool.Get()
				pk.SetLen(1500)
				pk.Seq = int64(i)
				enq(now, i%max(bc.ports, 1), pk)
				now += ms
				for q := deq(now); q != nil; q = deq(now) {
					q.Free()
				}
			}
		})
	}
}

// FuzzParseAccess checks that ParseAccess never panics, and that a host it
// accepts is numbered 1 to MaxHosts and prints as a name that parses back
// to it.
func FuzzParseAccess(f *testing.F) {
	for _, s := range []string{"c2=netem delay 40ms", "s16=", "c0=x", "c17=", "=tbf", "c", "s1", "C3 = fq_codel", "c+1=", "c01="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, _, err := link.ParseAccess(s)
		if err != nil {
			return
		}
		if h.N < 1 || h.N > link.MaxHosts {
			t.Fatalf("%q: host %+v", s, h)
		}
		if g, err := link.ParseHost(h.String()); err != nil || g != h {
			t.Fatalf("%q: %v prints as %q, which parses to %v, %v", s, h, h.String(), g, err)
		}
	})
}
