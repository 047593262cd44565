package calibrate

import (
	"math"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

func TestCompare(t *testing.T) {
	ms := []Measurement{
		{Engine: Kernel, Test: TCP, GoodputBps: 9.5e6, DelayMs: 60, Drops: 100},
		{Engine: Wanlab, Test: TCP, GoodputBps: 9.6e6, DelayMs: 62, Drops: 121},
		{Engine: Kernel, Test: TCP, GoodputBps: 9.7e6, DelayMs: 64, Drops: 100},
		{Engine: Wanlab, Test: TCP, GoodputBps: 9.6e6, DelayMs: 62, Drops: 121},
		{Engine: Kernel, Test: UDP, GoodputBps: 0, DelayMs: 0, Drops: 0},
		{Engine: Wanlab, Test: UDP, GoodputBps: 1, DelayMs: 0, Drops: 0},
	}
	rows := Compare(ms)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6: %+v", len(rows), rows)
	}
	g := rows[0]
	if g.Metric != Goodput || g.Kernel != 9.6 || g.Wanlab != 9.6 || g.Ratio != 1 || !g.Within || math.Abs(g.KernelSpread-0.2) > 1e-9 {
		t.Errorf("goodput row %+v", g)
	}
	if d := rows[2]; d.Metric != Drops || d.Within || math.Abs(d.Ratio-1.21) > 1e-9 {
		t.Errorf("121 drops against 100 are outside both 10 %% and 2√100: %+v", d)
	}
	if u := rows[3]; !math.IsInf(u.Ratio, 1) || u.Within {
		t.Errorf("goodput where the kernel had none: %+v", u)
	}
	if u := rows[5]; u.Ratio != 1 || !u.Within {
		t.Errorf("no drops on either side: %+v", u)
	}
	var b strings.Builder
	PrintRows(&b, rows)
	if !strings.Contains(b.String(), "tcp   drops") || !strings.Contains(b.String(), "NO (±10 % or 2√N)") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestWithinSmallCounts(t *testing.T) {
	for _, c := range []struct {
		k, w float64
		want bool
	}{{8, 10, true}, {8, 14, false}, {1000, 1099, true}, {1000, 1101, false}, {0, 0, true}, {0, 1, false}} {
		if got := Within(Drops, c.k, c.w); got != c.want {
			t.Errorf("Within(drops, %v, %v) = %v", c.k, c.w, got)
		}
	}
	if Within(Goodput, 100, 100.6) {
		t.Error("goodput 0.6 % off is within 0.5 %")
	}
}

func TestCheckAndElements(t *testing.T) {
	specs, err := Config{Chain: "tc qdisc add dev eth0 root handle 1: netem delay 20ms; tbf rate 10mbit burst 10000 limit 30000"}.Check()
	if err != nil || len(specs) != 2 {
		t.Fatalf("%v %v", specs, err)
	}
	if got := Elements("tc qdisc add dev eth0 root handle 1: netem delay 20ms # one\n tbf rate 10mbit \\\n burst 10000 limit 30000"); strings.Join(got, "|") != "netem delay 20ms|tbf rate 10mbit burst 10000 limit 30000" {
		t.Errorf("elements %q", got)
	}
	// Every kind wanlab emulates starts an element, red's too.
	if got := Elements("tc qdisc add dev eth0 root handle 1: tbf rate 10mbit burst 32k latency 50ms\ntc qdisc add dev eth0 parent 1:1 red limit 400000 avpkt 1000"); strings.Join(got, "|") != "tbf rate 10mbit burst 32k latency 50ms|red limit 400000 avpkt 1000" {
		t.Errorf("elements %q", got)
	}
	if r := floodRate(specs); r != 12e6 {
		t.Errorf("flood rate %d, want 12 Mbit/s", r)
	}
	if r := floodRate([]qdisc.Spec{qdisc.CoDelConfig{}}); r != 20e6 {
		t.Errorf("flood rate without a rate %d", r)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no chain given"},
		{Config{Chain: "netem delay 10ms 1ms correlation kernel"}, "wanlab's own word"},
		{Config{Chain: "tbf rate 10mbit"}, "burst"},
		{Config{Chain: "pfifo", Tests: []Test{"ping"}}, "unknown"},
		{Config{Chain: "pfifo", Duration: time.Second, Warmup: 2 * time.Second}, "warm-up"},
		{Config{Chain: "netem delay 1ms 1ms distribution mine"}, "built-in distributions"},
	} {
		if _, err := c.cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error about %q", c.cfg, err, c.want)
		}
	}
}

func TestPrintRouterWarnsWhenLate(t *testing.T) {
	var b strings.Builder
	PrintRouter(&b, []Measurement{{Engine: Kernel}})
	if b.Len() != 0 {
		t.Errorf("printed without wanlab measurements: %q", b.String())
	}
	PrintRouter(&b, []Measurement{{Engine: Wanlab, Router: &RouterDelay{LatenessP99Ms: 0.2, StallP99Ms: 0.1}}})
	if !strings.Contains(b.String(), "p99 0.200 ms") || strings.Contains(b.String(), "warning") {
		t.Errorf("on time: %q", b.String())
	}
	b.Reset()
	PrintRouter(&b, []Measurement{{Engine: Wanlab, Router: &RouterDelay{LatenessP99Ms: 0.2}}, {Engine: Wanlab, Router: &RouterDelay{StallP99Ms: 30}}})
	if !strings.Contains(b.String(), "stalls p99 30.000 ms") || !strings.Contains(b.String(), "warning") {
		t.Errorf("late: %q", b.String())
	}
}
