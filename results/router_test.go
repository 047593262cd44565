package results

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/fidelity"
	"wanlab/internal/schematest"
)

// sampleRouter is a router report with every key present: a direction
// that is not faithful, a timed change, steps and a note.
func sampleRouter() *RouterReport {
	faithful := false
	d12 := 12e6
	return &RouterReport{
		Mode: RouterLab, Testbed: "wl-lab", Faithful: &faithful,
		Directions: []DirectionReport{{
			Name: "up", ChainStart: "tbf rate 10mbit burst 32k latency 50ms", ChainEnd: "",
			ConfiguredRateBps: 9_000_000, LoadRateBps: 8.5e6,
			Sent: 1000, BytesIn: 1_500_000, Delivered: 990, BytesOut: 1_485_000, Dropped: 10,
			DroppedByReason: map[string]uint64{"loss": 6, "limit": 4}, Marked: 2, Reordered: 1,
			Delay:            DelayReport{N: 990, MeanNs: 12.5e6, MinNs: 1e6, P50Ns: 12e6, P99Ns: 30e6, MaxNs: 31.25e6},
			Lateness:         LatenessReport{N: 990, P50Ns: 2000, P99Ns: 1_500_000, MaxNs: 3_000_000},
			PercentilesSince: "testbed", LoopBusy: 0.2, LoopHeld: 0.05,
			RingWait: &LatenessReport{N: 990, P50Ns: 3000, P99Ns: 90_000, MaxNs: 400_000},
			Verdict: fidelity.Verdict{Direction: "up", ToleranceNs: 1_000_000,
				Causes: []fidelity.Cause{{Code: "late_releases", Text: "late"}}},
		}},
		Changes: []AppliedChange{{AtS: 1, AppliedS: 1.002, Direction: "up", Chain: "", Effect: "1 tbf: removed"},
			{AtS: 2, AppliedS: 2, Direction: "down", Chain: "netem delay 1ms", Error: "refused"}},
		Steps: &RouterSteps{TS: []float64{0, 0.2},
			Up:   RouterStepsColumns{DeliveredBytes: []uint64{0, 100}, Dropped: []uint64{0, 1}, Marked: []uint64{0, 0}, DelayMeanNs: []*float64{nil, &d12}, Queued: []uint64{0, 3}},
			Down: RouterStepsColumns{DeliveredBytes: []uint64{0, 0}, Dropped: []uint64{0, 0}, Marked: []uint64{0, 0}, DelayMeanNs: []*float64{nil, nil}, Queued: []uint64{0, 0}}},
		Note: "a note",
	}
}

// treeDirection is a direction whose path is an htb tree: its qdiscs and
// classes at the end of the run.
func treeDirection() DirectionReport {
	tree := "tc qdisc add dev DEV root handle 1: htb default 20; tc class add dev DEV parent 1: classid 1:1 htb rate 10Mbit; " +
		"tc class add dev DEV parent 1:1 classid 1:10 htb rate 1Mbit ceil 10Mbit; tc qdisc add dev DEV parent 1:10 handle 10: pfifo limit 100"
	return DirectionReport{Name: "down", ChainStart: tree, ChainEnd: tree, PercentilesSince: "run",
		Qdiscs: []QdiscReport{
			{Kind: "htb", Handle: "1:", Parent: "root", Options: "default 20", Packets: 900, Bytes: 1_362_600, Dropped: 7, Overlimits: 40, DirectPackets: 2},
			{Kind: "pfifo", Handle: "10:", Parent: "1:10", Options: "limit 100", Packets: 900, Bytes: 1_362_600, Dropped: 7, Qlen: 3, Backlog: 4542},
		},
		Classes: []ClassReport{
			{Kind: "htb", ClassID: "1:1", Parent: "root", Options: "htb rate 10Mbit ceil 10Mbit burst 1600 cburst 1600 mtu 1600", Level: 7, Packets: 900, Bytes: 1_362_600, Lends: 900, TokensNs: 1_280_000, CTokensNs: 1_280_000},
			{Kind: "htb", ClassID: "1:10", Parent: "1:1", Leaf: "10:", Options: "htb rate 1Mbit ceil 10Mbit burst 1600 cburst 1600 quantum 12500 mtu 1600", Packets: 900, Bytes: 1_362_600,
				Dropped: 7, Overlimits: 40, Lends: 100, Borrows: 800, Qlen: 3, Backlog: 4542, TokensNs: -6_400, CTokensNs: 640_000},
		},
	}
}

// A tree's qdiscs and classes at the end print as tc -s qdisc show and tc
// -s class show do, without the spaces tc leaves at the ends of lines.
func TestWriteRouterTree(t *testing.T) {
	var b strings.Builder
	rep := sampleRouter()
	rep.Directions = append(rep.Directions, treeDirection())
	if err := WriteSummary(&b, &Document{Router: rep}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      at the end, as tc -s qdisc show and tc -s class show (counts over the run):\n" +
			"qdisc htb 1: root refcnt 2 r2q 10 default 0x20 direct_packets_stat 2 direct_qlen 1000\n" +
			" Sent 1362600 bytes 900 pkt (dropped 7, overlimits 40 requeues 0)\n backlog 0b 0p requeues 0\n" +
			"qdisc pfifo 10: parent 1:10 limit 100p\n",
		"class htb 1:1 root rate 10Mbit ceil 10Mbit burst 1600b cburst 1600b\n" +
			" Sent 1362600 bytes 900 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\n lended: 900 borrowed: 0 giants: 0\n tokens: 20000 ctokens: 20000\n\n",
		"class htb 1:10 parent 1:1 leaf 10: prio 0 rate 1Mbit ceil 10Mbit burst 1600b cburst 1600b\n" +
			" Sent 1362600 bytes 900 pkt (dropped 7, overlimits 40 requeues 0)\n backlog 4542b 3p requeues 0\n lended: 100 borrowed: 800 giants: 0\n tokens: -100 ctokens: 10000\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks\n%s\nin\n%s", want, b.String())
		}
	}
}

// Every key of the router report is snake_case and documented.
func TestRouterReportKeys(t *testing.T) {
	rep := sampleRouter()
	rep.Directions = append(rep.Directions, treeDirection())
	schematest.CheckKeys(t, rep)
}

// A run without a router, or without readings of it, says so in a line.
func TestWriteRouterWithoutReadings(t *testing.T) {
	for _, c := range []struct {
		rep  RouterReport
		want string
	}{
		{RouterReport{Mode: RouterDirect, Testbed: "x", Note: "a veth pair"}, "\nRouter: none (a veth pair)\n"},
		{RouterReport{Mode: RouterTestbed, Testbed: "x", Note: "reading the router failed: gone"}, "\nRouter: no readings (reading the router failed: gone)\n"},
	} {
		var b strings.Builder
		if err := WriteSummary(&b, &Document{Router: &c.rep}, false); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), c.want) {
			t.Errorf("%s: the summary ends\n%s\nwant %q", c.rep.Mode, b.String(), c.want)
		}
	}
}

// Late releases on a kernel in preemption mode none are followed by the
// hint that says what the mode does; on another mode, or without late
// releases, they are not. The run's line names the mode.
func TestLateReleasesHint(t *testing.T) {
	notLate := sampleRouter()
	notLate.Directions[0].Verdict.Causes = []fidelity.Cause{{Code: "ring_drops", Text: "drops"}}
	for _, c := range []struct {
		name, mode string
		rep        *RouterReport
		want       bool
	}{
		{"late, none", "none", sampleRouter(), true},
		{"late, full", "full", sampleRouter(), false},
		{"late, unknown", "", sampleRouter(), false},
		{"ring drops, none", "none", notLate, false},
	} {
		var b strings.Builder
		d := &Document{Run: Run{KernelRelease: "6.1.0", KernelPreemption: c.mode}, Router: c.rep}
		if err := WriteSummary(&b, d, false); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if got := strings.Contains(out, "  "+LateReleasesHint+"\n"); got != c.want {
			t.Errorf("%s: the hint printed %v, want %v:\n%s", c.name, got, c.want, out)
		}
		if c.mode != "" && !strings.Contains(out, "kernel: 6.1.0 (preemption "+c.mode+")") {
			t.Errorf("%s: the run's line lacks the mode:\n%s", c.name, out)
		}
	}
}

// A version 1 document, stored as a run of that version wrote it (a
// tcp_upload run whose up direction a trace of 6 Mbit/s limited), gave
// the router's delays in ms. It reads as version 2 has them, in ns, and
// its summary is the text that version printed (testdata/*.summary.txt,
// printed by `wanlab show` of the wanlab that made the run, its
// identical client's and server's sysctls folded into one line since),
// before and after it is written again as version 2.
func TestReadVersion1(t *testing.T) {
	d, err := ReadFile(filepath.Join("testdata", "v1-trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "v1-trace.summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	up := d.Router.Directions[0]
	if up.ConfiguredRateBps != 6_000_000 || up.Delay.N != 1120 || up.Delay.MinNs != 5_379_064 || up.Delay.MaxNs != 47_599_839 {
		t.Errorf("up: configured %d bit/s, delay %+v", up.ConfiguredRateBps, up.Delay)
	}
	if got := *d.Router.Steps.Up.DelayMeanNs[1]; got != 6_131_007 {
		t.Errorf("the step's mean delay %v ns, want 6131007", got)
	}
	if d.Router.Steps.Up.DelayMeanNs[0] != nil {
		t.Error("a step without deliveries has a mean delay")
	}
	summary := func(d *Document) string {
		var b strings.Builder
		if err := WriteSummary(&b, d, false); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got := summary(d); got != string(want) {
		t.Errorf("the version 1 document's summary differs from the one its version printed:\n%s\nwant\n%s", got, want)
	}

	var v2 bytes.Buffer
	if err := d.Encode(&v2); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(v2.Bytes(), []byte(`{"format":"wanlab-results","version":2,`)) ||
		!bytes.Contains(v2.Bytes(), []byte(`"delay":{"n":1120,"mean_ns":`)) || !bytes.Contains(v2.Bytes(), []byte(`"delay_mean_ns":[null,6131007,`)) ||
		bytes.Contains(v2.Bytes(), []byte(`_ms"`)) {
		t.Errorf("written again: %s", v2.Bytes())
	}
	back, err := Decode(&v2)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(back); got != string(want) {
		t.Errorf("written again as version 2, its summary differs:\n%s\nwant\n%s", got, want)
	}
}

// The router's figures of a direction are series a view finds by name, in
// ms, with the statistics the router records and NaN for the others; a
// direction the run did not have, an unknown key, a run without a router
// and a direction that delivered nothing have none.
func TestRouterSeries(t *testing.T) {
	d := &Document{Router: sampleRouter()}
	if got, want := strings.Join(d.Router.RouterSeriesNames(), ", "), "router up::delay, router up::lateness"; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
	delay := d.FindSeries("router up::delay")
	if delay == nil || delay.Unit != "ms" || delay.Summary.N != 990 {
		t.Fatalf("router up::delay: %+v", delay)
	}
	late := d.FindSeries("router up::lateness")
	if late == nil {
		t.Fatal("no router up::lateness")
	}
	for _, c := range []struct {
		s    *Series
		stat string
		want float64 // NaN: not recorded
	}{
		{delay, "mean", 12.5}, {delay, "median", 12}, {delay, "min", 1}, {delay, "p99", 30}, {delay, "max", 31.25},
		{delay, "p90", math.NaN()}, {delay, "total", math.NaN()}, {delay, "stddev", math.NaN()},
		{late, "median", 0.002}, {late, "p99", 1.5}, {late, "max", 3},
		{late, "mean", math.NaN()}, {late, "min", math.NaN()}, {late, "variance", math.NaN()},
	} {
		got, ok := c.s.Summary.Stat(c.stat)
		if !ok || !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s %s = %v, want %v", c.s.Name, c.stat, got, c.want)
		}
	}
	for _, name := range []string{"router down::delay", "router up::queue", "router up", "router::delay", "up::delay"} {
		if s := d.FindSeries(name); s != nil {
			t.Errorf("%q found: %+v", name, s)
		}
	}
	if s := (&Document{}).FindSeries("router up::delay"); s != nil {
		t.Errorf("a run without a router has %+v", s)
	}
	d.Router.Directions[0].Delay.N, d.Router.Directions[0].Lateness.N = 0, 0
	if d.FindSeries("router up::delay") != nil || d.FindSeries("router up::lateness") != nil {
		t.Error("a direction that delivered nothing has router series")
	}
}
