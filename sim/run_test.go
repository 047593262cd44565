package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"wanlab/internal/coretest"
	"wanlab/internal/schematest"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// netemLink is a direction through one netem.
func netemLink(c qdisc.NetemConfig) link.Config {
	if c.Limit == 0 {
		c.Limit = qdisc.DefaultNetemLimit
	}
	return link.Config{Chain: []qdisc.Spec{c}}
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
	// Throughput: 582 packets of 1514 bytes as the device counts them
	// (IP length plus the Ethernet header), 8 bits each, over 1 s.
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
			Up:    netemLink(qdisc.NetemConfig{Delay: 5 * time.Millisecond, Rate: 250000, Limit: 20}),
			Down:  netemLink(qdisc.NetemConfig{Delay: 5 * time.Millisecond, Jitter: time.Millisecond}),
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
		Up:   netemLink(qdisc.NetemConfig{Delay: 20 * time.Millisecond, Rate: 125000, Limit: 10, Duplicate: 0.02}),
		Down: netemLink(qdisc.NetemConfig{Delay: 30 * time.Millisecond}),
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
	coretest.CheckLive(t, r.pool, int(res.Up.Queued+res.Down.Queued))
	// The up delay is at least the 20 ms line plus one 500-byte packet's
	// serialisation (514 framed bytes at 1 Mbit/s: 4.112 ms), and at most
	// that of the ten packets netem holds, each at most 1014 framed bytes
	// (8.112 ms), and one more.
	if d := res.Up.Delay; d.N == 0 || d.Min < 24.112e6 || d.Max > (20+11*8.112)*1e6 {
		t.Errorf("up delay %+v", d)
	}
}

func TestReorderingAndMarks(t *testing.T) {
	// "delay 1ms reorder 100% gap 2" delays every other packet by 1 ms and
	// sends the others at once; "loss state 100% 100%" alternates between
	// a loss (with ecn, a CE mark of the ECT packet) and a delivery.
	cfg := Config{
		Duration: time.Second,
		Up:       netemLink(qdisc.NetemConfig{Delay: time.Millisecond, Reorder: 1, Gap: 2}),
		Down:     netemLink(qdisc.NetemConfig{Loss: qdisc.Loss{Kind: qdisc.LossState, P13: 1, P31: 1, P23: 1}, ECN: true}),
		Flows:    []Flow{CBR{Rate: 10000, Size: 100, Count: 10}, CBR{Rate: 10000, Size: 100, Count: 8, Dir: "down", ECN: 2}},
	}
	recs := collect(&cfg)
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Packets come every 10 ms, far apart for a 1 ms delay: nothing is
	// reordered...
	if res.Up.Reordered != 0 || res.Up.Delivered != 10 {
		t.Errorf("up %+v", res.Up)
	}
	// ...and two flows sending at the same instants have each pair (0:k,
	// 1:k) leave swapped, which is in order within each flow.
	cfg.Flows = []Flow{CBR{Rate: 10000, Size: 100, Count: 10}, CBR{Rate: 10000, Size: 100, Count: 10}}
	cfg.OnPacket = nil
	res2, _ := Run(cfg)
	if res2.Up.Reordered != 0 || res2.Up.Delivered != 20 {
		t.Errorf("two flows %+v", res2.Up)
	}
	cfg.Flows = []Flow{CBR{Rate: 200000, Size: 100, Count: 10}}
	res3, _ := Run(cfg)
	// One flow every 0.5 ms: each delayed packet is overtaken by the next,
	// sent at once, so every first of a pair is reordered: 5 of 10.
	if res3.Up.Reordered != 5 || res3.Flows[0].ReorderedRatio != 0.5 {
		t.Errorf("one flow %+v", res3.Up)
	}
	marked := 0
	for _, r := range *recs {
		if r.Verdict == "marked" {
			marked++
		}
	}
	if res.Down.Marked != 4 || marked != 4 || res.Down.Dropped != 0 {
		t.Errorf("down %+v, %d marked records", res.Down, marked)
	}
}

func TestResultJSON(t *testing.T) {
	res, err := Run(Config{Duration: 500 * time.Millisecond, Seed: 3,
		Up:    netemLink(qdisc.NetemConfig{Delay: 10 * time.Millisecond, Rate: 12500, Limit: 2}),
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
	// 1000-byte IP packets (1014 bytes on Ethernet) every 8 ms into netem
	// "delay 10ms rate 100kbit limit 2": each takes 81.12 ms, after the
	// latest one still queued. Packet 0 leaves at 10+81.12 ms and packet 1
	// (sent at 8 ms) at 172.24 ms; from then on a packet is accepted each
	// time one leaves (those sent at 96, 176, 256, 336 and 416 ms) and
	// leaves 81.12 ms after the one before: at 253.36, 334.48, 415.6,
	// 496.72 and 577.84 ms. So 6 leave before 500 ms, with delays 91.12,
	// 164.24, 157.36, 158.48, 159.6 and 160.72 ms; 1 is queued and the
	// other 56 of the 63 sent are dropped.
	const ms = 1e6
	want := link.Delay{N: 6, Min: 91.12 * ms, Mean: 891.52 / 6 * ms, P50: 159.04 * ms, P90: 162.48 * ms, P99: 164.064 * ms, Max: 164.24 * ms, Exact: true}
	if d := res.Up.Delay; math.Abs(d.P99-want.P99) > 1e-3 || math.Abs(d.Mean-want.Mean) > 1e-3 || math.Abs(d.Min-want.Min) > 1e-3 ||
		math.Abs(d.P50-want.P50) > 1e-3 || math.Abs(d.P90-want.P90) > 1e-3 || math.Abs(d.Max-want.Max) > 1e-3 || d.N != want.N || !d.Exact {
		t.Errorf("delay %+v, want %+v", d, want)
	}
	// Throughput counts framed bytes: 6 packets of 1014 bytes in 0.5 s.
	if res.Up.Sent != 63 || res.Up.Delivered != 6 || res.Up.Queued != 1 || res.Up.Dropped != 56 || res.Up.ThroughputBps != 6*1014*8*2 {
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
		{Config{Duration: time.Second, Up: netemLink(qdisc.NetemConfig{Limit: -1})}, "up: "},
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
		cfg := Config{Duration: d, Up: netemLink(qdisc.NetemConfig{Delay: time.Millisecond}),
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
	// The trace's opportunities carry IP bytes, as mahimahi's do; the
	// throughput counts framed bytes (1514 per packet).
	if res.Up.Sent != 2000 || res.Up.Delivered != 999 || res.Up.Queued != 1001 || res.Up.ThroughputBps != 999*1514*8 {
		t.Errorf("up %+v", res.Up)
	}
	// Packet k (sent at k/2 ms) leaves at k+1 ms: delay k/2 + 1 ms, from 1
	// to 500 ms for k = 0..998.
	if d := res.Up.Delay; d.Min != 1e6 || d.Max != 500e6 || d.Mean != 250.5e6 {
		t.Errorf("delay %+v", d)
	}
}

// The headline figure of Ethernet framing: a saturating flow of 1500-byte
// IP packets through "tbf rate 10mbit burst 32k latency 50ms" delivers 10
// Mbit/s of framed bytes (1514 per packet, as tc -s counts them on an
// Ethernet interface), so the IP goodput is 10·1500/1514 Mbit/s and the
// TCP payload of full-size segments (1448 bytes with timestamps) 9.564
// Mbit/s. Counting IP bytes only, as a TUN device does, would give 10 and
// 9.653.
func TestEthernetTBFGoodput(t *testing.T) {
	rate := qdisc.Rate(10e6 / 8)
	tbf := qdisc.TBFConfig{Rate: rate, Burst: 32 << 10, Limit: qdisc.TBFLatencyLimit(rate, 32<<10, 0, 0, 50*time.Millisecond)}
	cfg := Config{Duration: 10 * time.Second, Up: link.Config{Chain: []qdisc.Spec{tbf}},
		Flows: []Flow{CBR{Rate: qdisc.Rate(12e6 / 8), Size: 1500}}}
	recs := collect(&cfg)
	if _, err := Run(cfg); err != nil {
		t.Fatal(err)
	}
	// Measure from 1 s on, when the initial 32 KB burst has long drained.
	from, to := int64(time.Second), int64(10*time.Second)
	n := 0
	for _, r := range *recs {
		if r.Verdict == VerdictDelivered && r.LeftNs >= from && r.LeftNs < to {
			n++
		}
	}
	secs := float64(to-from) / 1e9
	check := func(what string, bytesPerPacket int, want float64) {
		t.Helper()
		got := float64(n*bytesPerPacket*8) / secs / 1e6
		if math.Abs(got-want)/want > 0.0005 {
			t.Errorf("%s: %.4f Mbit/s, want %.4f", what, got, want)
		}
	}
	check("framed", 1514, 10)
	check("IP goodput", 1500, 10*1500.0/1514)
	check("TCP payload", 1448, 9.564)
}

// A direction's seed is link.DirectionSeed of the run's seed and its name,
// the lab's derivation: setting it explicitly gives the same run.
func TestDirectionSeedsAreTheLabs(t *testing.T) {
	jitter := []qdisc.Spec{qdisc.NetemConfig{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Limit: 1000}}
	run := func(seed uint64, up, down link.Config) []PacketRecord {
		up.Chain, down.Chain = jitter, jitter
		cfg := Config{Duration: time.Second, Seed: seed, Up: up, Down: down,
			Flows: []Flow{CBR{Rate: 125000, Size: 1000}, CBR{Rate: 125000, Size: 1000, Dir: "down"}}}
		recs := collect(&cfg)
		if _, err := Run(cfg); err != nil {
			t.Fatal(err)
		}
		return *recs
	}
	derived := run(7, link.Config{}, link.Config{})
	explicit := run(99, link.Config{Env: qdisc.Env{Seed: link.DirectionSeed(7, "up")}},
		link.Config{Env: qdisc.Env{Seed: link.DirectionSeed(7, "down")}})
	if len(derived) == 0 || !reflect.DeepEqual(derived, explicit) {
		t.Error("run seed 7 and explicit link.DirectionSeed(7, ...) seeds differ")
	}
	if reflect.DeepEqual(derived, run(8, link.Config{}, link.Config{})) {
		t.Error("run seeds 7 and 8 gave the same jitter")
	}
}

// Numbers that overflow int64 nanoseconds do not turn into no delay: a
// delay beyond the clock's range is refused with the limit, and departures
// of a rate so slow that they run past the clock's end stay queued (the
// kernel's s64 arithmetic would send them at once).
func TestNoSilentOverflow(t *testing.T) {
	if _, err := tcspec.ParseChain("netem delay 9223372036s", tcspec.Options{}); err == nil || !strings.Contains(err.Error(), "2^62 ns") {
		t.Errorf("netem delay 9223372036s: %v", err)
	}
	chain, err := tcspec.ParseChain("netem rate 8bit 2147483647", tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Duration: 10 * time.Second, Up: link.Config{Chain: chain},
		Flows: []Flow{CBR{Rate: 1250000, Size: 1500}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Up.Delivered != 0 || res.Up.Queued != 1000 || res.Up.Dropped != res.Up.Sent-1000 {
		t.Errorf("up %+v: want nothing delivered, netem's 1000 queued, the rest dropped", res.Up)
	}
}
