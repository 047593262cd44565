package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"wanlab/internal/schematest"
	"wanlab/link"
	"wanlab/link/linktest"
	"wanlab/qdisc"
)

func delayLink(spec linktest.DelaySpec) link.Config {
	return link.Config{Build: linktest.Builder(spec)}
}

func collect(cfg *Config) *[]PacketRecord {
	var recs []PacketRecord
	cfg.OnPacket = func(r PacketRecord) { recs = append(recs, r) }
	return &recs
}

func TestCBRSpacingIsExact(t *testing.T) {
	// 1500 B at 7 Mbit/s: a gap of 1500/875000 s = 1714285.714... ns, which
	// must not drift: packet k is sent at floor(k·1500e9/875000) ns.
	cfg := Config{Duration: time.Second, Flows: []Flow{CBR{Rate: 875000, Size: 1500, Start: 3 * time.Millisecond}}}
	recs := collect(&cfg)
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Sends at 3 ms + k·1.714 ms below 1 s: k <= 581, so 582 packets.
	if len(*recs) != 582 || res.Up.Sent != 582 {
		t.Fatalf("%d records, %d sent; want 582", len(*recs), res.Up.Sent)
	}
	for k, r := range *recs {
		want := int64(3e6) + int64(k)*1500e9/875000
		if r.SentNs != want || r.LeftNs != want || r.Seq != int64(k) || r.Verdict != "delivered" || r.Dir != "up" || r.Size != 1500 {
			t.Fatalf("packet %d: %+v, want sent at %d", k, r, want)
		}
	}
	// A direct path adds no delay.
	if d := res.Up.Delay; d.N != 582 || d.Max != 0 || d.Mean != 0 {
		t.Errorf("direct path delay %+v", d)
	}
	if res.Up.Delivered != 582 || res.Up.Queued != 0 || res.Down.Sent != 0 {
		t.Errorf("counters up %+v down %+v", res.Up, res.Down)
	}
	// Throughput: 582 framed packets (1500 IP bytes and 14 of Ethernet
	// header) over 1 s.
	if res.Up.ThroughputBps != 582*1514*8 {
		t.Errorf("throughput %v", res.Up.ThroughputBps)
	}
}

func TestCBRCount(t *testing.T) {
	res, err := Run(Config{Duration: time.Second, Flows: []Flow{CBR{Rate: 1e6, Size: 1000, Count: 10, Dir: "down"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Down.Sent != 10 || res.Flows[0].Sent != 10 || res.Flows[0].Dir != "down" {
		t.Errorf("down %+v flow %+v", res.Down, res.Flows[0])
	}
}

func TestPoissonMeanRate(t *testing.T) {
	// 1 Mbit/s of 125-byte packets: 1000 packets/s, 20000 expected in 20 s;
	// the count's standard deviation is sqrt(20000) = 141, so 3% is > 4σ.
	cfg := Config{Duration: 20 * time.Second, Seed: 42, Flows: []Flow{Poisson{Rate: 125000, Size: 125}}}
	recs := collect(&cfg)
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(res.Up.Sent)
	if math.Abs(n-20000)/20000 > 0.03 {
		t.Errorf("%v packets, want 20000 ± 3%%", n)
	}
	// Exponential gaps: mean 1 ms and standard deviation equal to it.
	var sum, sq float64
	rs := *recs
	for i := 1; i < len(rs); i++ {
		g := float64(rs[i].SentNs - rs[i-1].SentNs)
		sum += g
		sq += g * g
	}
	m := sum / float64(len(rs)-1)
	sd := math.Sqrt(sq/float64(len(rs)-1) - m*m)
	if math.Abs(m-1e6)/1e6 > 0.03 || math.Abs(sd/m-1) > 0.05 {
		t.Errorf("gap mean %v ns, cv %v; want 1e6 and 1", m, sd/m)
	}
}

func TestReproducible(t *testing.T) {
	run := func(seed uint64) []PacketRecord {
		cfg := Config{
			Duration: 2 * time.Second, Seed: seed,
			Up:    delayLink(linktest.DelaySpec{Delay: 5 * time.Millisecond, Rate: 250000, Limit: 20}),
			Down:  delayLink(linktest.DelaySpec{Delay: 5 * time.Millisecond}),
			Flows: []Flow{Poisson{Rate: 200000, Size: 1000}, Poisson{Rate: 100000, Size: 500}, Poisson{Rate: 50000, Size: 200, Dir: "down"}},
		}
		recs := collect(&cfg)
		if _, err := Run(cfg); err != nil {
			t.Fatal(err)
		}
		return *recs
	}
	a, b, c := run(7), run(7), run(8)
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("same seed gave different runs (%d and %d records)", len(a), len(b))
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same run")
	}
}

func TestCountersBalance(t *testing.T) {
	cfg := Config{
		Duration: time.Second,
		// 2 Mbit/s offered into 1 Mbit/s with a 10-packet queue: drops,
		// and packets still queued at the end.
		Up:   delayLink(linktest.DelaySpec{Delay: 20 * time.Millisecond, Rate: 125000, Limit: 10, DupEvery: 50}),
		Down: delayLink(linktest.DelaySpec{Delay: 30 * time.Millisecond}),
		Flows: []Flow{
			CBR{Rate: 125000, Size: 1000},
			Poisson{Rate: 125000, Size: 500},
			CBR{Rate: 50000, Size: 100, Dir: "down"},
		},
	}
	recs := collect(&cfg)
	r, err := newRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.loop()
	res := r.result()
	check := func(name string, d DirResult) {
		t.Helper()
		if d.Sent+d.Duplicated != d.Delivered+d.Dropped+d.Queued {
			t.Errorf("%s: sent %d + dup %d != delivered %d + dropped %d + queued %d", name, d.Sent, d.Duplicated, d.Delivered, d.Dropped, d.Queued)
		}
		if byReason := d.DroppedByReason.Total(); byReason != d.Dropped {
			t.Errorf("%s: dropped_by_reason sums to %d, dropped %d", name, byReason, d.Dropped)
		}
	}
	check("up", res.Up)
	check("down", res.Down)
	var sum DirResult
	for _, f := range res.Flows {
		check(f.Spec, f.DirResult)
		if f.Dir == "up" {
			sum.Sent += f.Sent
			sum.Delivered += f.Delivered
			sum.Dropped += f.Dropped
			sum.Queued += f.Queued
		}
	}
	if sum.Sent != res.Up.Sent || sum.Delivered != res.Up.Delivered || sum.Dropped != res.Up.Dropped || sum.Queued != res.Up.Queued {
		t.Errorf("flows sum to %+v, direction has %+v", sum, res.Up)
	}
	if res.Up.Dropped == 0 || res.Up.Queued == 0 || res.Down.Queued == 0 || res.Up.Duplicated == 0 {
		t.Errorf("scenario did not exercise drops/queue/dups: up %+v down %+v", res.Up, res.Down)
	}
	if res.Up.DroppedByReason[qdisc.ReasonLimit] != res.Up.Dropped {
		t.Errorf("dropped_by_reason %v", res.Up.DroppedByReason)
	}
	// Records: one per delivered or dropped packet, none for queued ones.
	var delivered, dropped uint64
	for _, rc := range *recs {
		switch {
		case rc.Verdict == "delivered":
			delivered++
			if rc.LeftNs < rc.SentNs {
				t.Fatalf("left before sent: %+v", rc)
			}
		case rc.Verdict == "dropped:limit":
			dropped++
			if rc.LeftNs != -1 {
				t.Fatalf("dropped with a leave time: %+v", rc)
			}
		default:
			t.Fatalf("verdict %q", rc.Verdict)
		}
	}
	if delivered != res.Up.Delivered+res.Down.Delivered || dropped != res.Up.Dropped+res.Down.Dropped {
		t.Errorf("%d delivered, %d dropped records; counters say %d, %d", delivered, dropped,
			res.Up.Delivered+res.Down.Delivered, res.Up.Dropped+res.Down.Dropped)
	}
	// Nothing leaks: the pool holds exactly the queued packets.
	if got := r.pool.Live(); got != int(res.Up.Queued+res.Down.Queued) {
		t.Errorf("pool has %d live packets, %d queued", got, res.Up.Queued+res.Down.Queued)
	}
	// The up delay is at least the 20 ms line plus one 1000-byte packet's
	// serialisation (8 ms at 1 Mbit/s).
	if d := res.Up.Delay; d.N == 0 || d.Min < 20.4e6 || d.Max > (20+11*8+1)*1e6 {
		t.Errorf("up delay %+v", d)
	}
}

func TestReorderingAndMarks(t *testing.T) {
	cfg := Config{
		Duration: time.Second,
		Up:       link.Config{Build: linktest.SwapBuilder(linktest.SwapSpec{Hold: time.Millisecond})},
		Down:     delayLink(linktest.DelaySpec{MarkEvery: 4}),
		Flows:    []Flow{CBR{Rate: 10000, Size: 100, Count: 10}, CBR{Rate: 10000, Size: 100, Count: 8, Dir: "down", ECN: 2}},
	}
	recs := collect(&cfg)
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The swap holds a lone packet for 1 ms, and packets come every 10 ms:
	// no pair ever forms, so nothing is reordered...
	if res.Up.Reordered != 0 || res.Up.Delivered != 10 {
		t.Errorf("up %+v", res.Up)
	}
	// ...unless two arrive together.
	cfg.Flows = []Flow{CBR{Rate: 10000, Size: 100, Count: 10}, CBR{Rate: 10000, Size: 100, Count: 10}}
	cfg.OnPacket = nil
	res2, _ := Run(cfg)
	// Flows 0 and 1 send at the same instants; each pair (0:k, 1:k) leaves
	// swapped, which is in order within each flow.
	if res2.Up.Reordered != 0 || res2.Up.Delivered != 20 {
		t.Errorf("two flows %+v", res2.Up)
	}
	cfg.Flows = []Flow{CBR{Rate: 200000, Size: 100, Count: 10}}
	res3, _ := Run(cfg)
	// One flow every 0.5 ms with a 1 ms hold: pairs form and swap, so
	// every first-of-pair is reordered: 5 of 10.
	if res3.Up.Reordered != 5 || res3.Flows[0].ReorderedRatio != 0.5 {
		t.Errorf("one flow %+v", res3.Up)
	}
	marked := 0
	for _, r := range *recs {
		if r.Verdict == "marked" {
			marked++
		}
	}
	if res.Down.Marked != 2 || marked != 2 {
		t.Errorf("down %+v, %d marked records", res.Down, marked)
	}
}

func TestResultJSON(t *testing.T) {
	res, err := Run(Config{Duration: 500 * time.Millisecond, Seed: 3,
		Up:    delayLink(linktest.DelaySpec{Delay: 10 * time.Millisecond, Rate: 12500, Limit: 2}),
		Flows: []Flow{CBR{Rate: 125000, Size: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	m := schematest.CheckKeys(t, res)
	if m["duration_s"] != 0.5 || m["seed"] != 3.0 {
		t.Errorf("header %v %v", m["duration_s"], m["seed"])
	}
	up := m["up"].(map[string]any)
	for _, k := range []string{"sent", "delivered", "dropped", "marked", "duplicated", "reordered", "reordered_ratio", "queued", "throughput_bps", "delay", "dropped_by_reason", "bytes_in", "bytes_out"} {
		if _, ok := up[k]; !ok {
			t.Errorf("up has no %q: %v", k, up)
		}
	}
	for _, k := range []string{"n", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "exact"} {
		if _, ok := up["delay"].(map[string]any)[k]; !ok {
			t.Errorf("delay has no %q", k)
		}
	}
	if up["dropped_by_reason"].(map[string]any)["limit"].(float64) == 0 {
		t.Errorf("no limit drops: %v", up)
	}
	if down := m["down"].(map[string]any); down["delay"].(map[string]any)["n"] != 0.0 {
		t.Errorf("idle direction delay = %v, want n 0", down["delay"])
	}
	f := m["flows"].([]any)[0].(map[string]any)
	if f["flow"] != 0.0 || f["spec"] != "cbr rate=1mbit size=1000 dir=up" || f["dir"] != "up" || f["sent"] != up["sent"] {
		t.Errorf("flow %v", f)
	}
	// 1000-byte packets every 8 ms into 100 kbit/s (80 ms each) with a
	// limit of 2. Packet 0 leaves at 80+10 ms and packet 1 (sent at 8 ms) at
	// 170 ms; from then on a packet is accepted each time one leaves (sent
	// at 96, 176, 256, 336 ms) and leaves 154 ms later. So 6 leave before
	// 500 ms, with delays 90, 162, 154, 154, 154, 154 ms; 2 are queued and
	// the other 55 of the 63 sent are dropped.
	const ms = 1e6
	want := link.Delay{N: 6, Min: 90 * ms, Mean: 868.0 / 6 * ms, P50: 154 * ms, P90: 158 * ms, P99: 161.6 * ms, Max: 162 * ms, Exact: true}
	if d := res.Up.Delay; math.Abs(d.P99-want.P99) > 1e-3 || math.Abs(d.Mean-want.Mean) > 1e-3 ||
		d.N != want.N || d.Min != want.Min || d.P50 != want.P50 || d.P90 != want.P90 || d.Max != want.Max {
		t.Errorf("delay %+v, want %+v", d, want)
	}
	if res.Up.Sent != 63 || res.Up.Delivered != 6 || res.Up.Queued != 2 || res.Up.Dropped != 55 || res.Up.ThroughputBps != 6*1014*8/0.5 {
		t.Errorf("up %+v", res.Up)
	}
}

func TestRunErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "duration"},
		{Config{Duration: time.Second, Flows: []Flow{CBR{Rate: 1, Size: 10}}}, "flow 0"},
		{Config{Duration: time.Second, Flows: []Flow{CBR{Rate: 1, Size: 100, TOS: 3}}}, "tos=0x03"},
		{Config{Duration: time.Second, Up: link.Config{Chain: []qdisc.Spec{linktest.DelaySpec{}}}}, "link up"},
	} {
		_, err := Run(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// The loop allocates nothing per packet: ten times the packets costs only
// the few allocations of the growing delay records.
func TestLoopAllocations(t *testing.T) {
	allocs := func(d time.Duration) float64 {
		cfg := Config{Duration: d, Up: delayLink(linktest.DelaySpec{Delay: time.Millisecond}),
			Flows: []Flow{CBR{Rate: 125e6, Size: 1500}}}
		return testing.AllocsPerRun(1, func() {
			if _, err := Run(cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, big := allocs(100*time.Millisecond), allocs(time.Second) // 8334 and 83334 packets
	if big-small > 40 {
		t.Errorf("%v allocations for 75000 more packets", big-small)
	}
}

func benchRun(b *testing.B, up link.Config) {
	// 1 Gbit/s of 1500-byte packets: one every 12 µs.
	cfg := Config{Duration: time.Duration(b.N) * 12 * time.Microsecond, Up: up,
		Flows: []Flow{CBR{Rate: 125e6, Size: 1500}}}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := Run(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if res.Up.Sent < uint64(b.N) {
		b.Fatalf("sent %d of %d", res.Up.Sent, b.N)
	}
	b.ReportMetric(float64(res.Up.Delivered)/b.Elapsed().Seconds(), "pkts/s")
}

func BenchmarkRun(b *testing.B) {
	b.Run("testdelay", func(b *testing.B) {
		benchRun(b, delayLink(linktest.DelaySpec{Delay: 10 * time.Millisecond, Rate: 125e6}))
	})
	b.Run("direct", func(b *testing.B) { benchRun(b, link.Config{}) })
}

func TestTraceDrivenDirection(t *testing.T) {
	// One 1500-byte opportunity every millisecond (12 Mbit/s) under 24
	// Mbit/s of 1500-byte packets: the opportunities at 1..999 ms carry one
	// packet each, the rest wait in the trace's unbounded queue.
	tr, err := link.ParseTrace([]byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Duration: time.Second, Up: link.Config{Trace: tr},
		Flows: []Flow{CBR{Rate: 3e6, Size: 1500}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Up.Sent != 2000 || res.Up.Delivered != 999 || res.Up.Queued != 1001 || res.Up.ThroughputBps != 999*1514*8 {
		t.Errorf("up %+v", res.Up)
	}
	// Packet k (sent at k/2 ms) leaves at k+1 ms: delay k/2 + 1 ms, from 1
	// to 500 ms for k = 0..998.
	if d := res.Up.Delay; d.Min != 1e6 || d.Max != 500e6 || d.Mean != 250.5e6 {
		t.Errorf("delay %+v", d)
	}
}
