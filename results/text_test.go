package results

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func summaryDoc() *Document {
	d := &Document{
		Run: Run{
			WanlabVersion: "v1.2.3", Argv: []string{"wanlab", "run", "tcp_upload", "--up", "tbf rate 10mbit burst 32k latency 50ms", "--title", "it's"},
			Test: "tcp_upload", Title: "uplink", Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			DurationS: 2, StepS: 0.5, LeadS: 1, TailS: 1, Seed: 99, Framing: "ip", KernelRelease: "6.1.0",
			Path:    Path{Up: "tbf rate 10mbit burst 32k latency 50ms", Down: ""},
			Options: map[string]string{"ping_hosts": "a b"},
		},
		Series: []Series{windowSeries("Mbits/s"), windowSeries("ms")},
		Flows: []Flow{{ID: 7, Label: "s", Direction: "up", Protocol: "tcp", TOS: 0xb8, CongestionControl: "bbr",
			Series: []Series{windowSeries("packets")}}},
	}
	d.Series[0].Name, d.Series[1].Name = "TCP upload", "Ping (ms) ICMP"
	d.Flows[0].Label = "TCP upload"
	d.Flows[0].Series[0].Name = "TCP upload::tcp_cwnd"
	d.Summarize()
	return d
}

func TestWriteSummary(t *testing.T) {
	d := summaryDoc()
	var b strings.Builder
	d.Router = sampleRouter()
	if err := WriteSummary(&b, d, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"wanlab tcp_upload - uplink\n",
		" started:   2026-01-02T03:04:05.000000006Z\n",
		` command:   wanlab run tcp_upload --up 'tbf rate 10mbit burst 32k latency 50ms' --title 'it'\''s'` + "\n",
		" load:      2s after a 1s lead, then a 1s tail; step 0.5s\n",
		" seed:      99   framing: ip   kernel: 6.1.0\n",
		" path up:   tbf rate 10mbit burst 32k latency 50ms\n path down: -\n",
		" options:   ping_hosts='a b'\n",
		// The window (1, 3] holds 2, a lost probe, 4 and 6.
		" TCP upload:\n  Window:      1 to 3 s\n  Data points: 3\n  Lost:        1\n  Total:       6.000000 Mbits\n  Min:         2.000000 Mbits/s\n  Median:      4.000000 Mbits/s\n  90th %:      5.600000 Mbits/s\n  99th %:      5.960000 Mbits/s\n  Max:         6.000000 Mbits/s\n  Mean:        4.000000 Mbits/s\n  Std dev:     1.632993\n  Variance:    2.666667\n",
		" Ping (ms) ICMP:\n  Window:      1 to 3 s\n  Data points: 3\n  Lost:        1\n  Min:         2.000000 ms\n",
		"   7  TCP upload  up    tcp   tos 0xb8  bbr\n",
		" TCP upload::tcp_cwnd      3      1     4.000000     4.000000     5.960000 packets\n",
		"\nVerdict: NOT FAITHFUL\n  up: late\n\nRouter (running testbed wl-lab):\n up   tbf rate 10mbit burst 32k latency 50ms\n      at the end: (no qdisc)\n",
		"      configured: rate 9.000 Mbit/s, delay 0.000 ms\n",
		"      achieved:   8.500 Mbit/s during the load, delay mean 12.500 ms, median 12.000, 99th % 30.000, max 31.250 ms\n",
		"      packets:    1000 in, 990 delivered, 10 dropped (limit 4, loss 6), 2 marked, 0 duplicated, 1 reordered\n",
		"      router:     lateness median 2µs, 99th % 1.5ms, max 3ms (tolerance 1ms); ring drops 0, write drops 0; loop busy 20%, held 5%\n",
		"      ring wait:  median 3µs, 99th % 90µs, max 400µs (from the kernel's arrival stamps to the router's reads)\n",
		" change at 1s (applied at 1.002s): up to (no qdisc)\n      1 tbf: removed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "PARTIAL") {
		t.Error("a complete run is marked partial")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("trailing spaces: %q", line)
		}
	}
	if strings.Index(out, "Verdict:") < strings.Index(out, "Flows:") {
		t.Error("the router's lines come before the flows")
	}
}

func TestWriteSummaryPartial(t *testing.T) {
	d := summaryDoc()
	d.Run.Partial, d.Run.PartialReason = true, "interrupted at 1.7 s"
	d.Series[1].Window = [2]float64{10, 20}
	d.Summarize()
	var b strings.Builder
	if err := WriteSummary(&b, d, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "*** PARTIAL RUN: interrupted at 1.7 s ***") != 2 {
		t.Errorf("the partial banner should open and close the summary:\n%s", out)
	}
	if !strings.Contains(out, " Ping (ms) ICMP:\n  Window:      10 to 20 s\n  Data points: 0\n  Lost:        0\n  No data.\n") {
		t.Errorf("a series without data:\n%s", out)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteSummaryReportsWriteErrors(t *testing.T) {
	d := summaryDoc()
	d.Router = sampleRouter()
	w := &failWriter{n: 3}
	err := WriteSummary(w, d, true)
	if err == nil || err.Error() != "disk full" {
		t.Errorf("error %v, want the writer's", err)
	}
	if w.n != -1 {
		t.Errorf("%d writes after the output had failed", -1-w.n)
	}
}

// TestWriteSummaryWithoutFlowSeries: by default the flows are listed but
// their own series are not, only how to see them.
func TestWriteSummaryWithoutFlowSeries(t *testing.T) {
	var b strings.Builder
	if err := WriteSummary(&b, summaryDoc(), false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "TCP upload::tcp_cwnd") || !strings.Contains(out, "--flow-series") || !strings.Contains(out, "   7  TCP upload  up") {
		t.Errorf("summary without flow series:\n%s", out)
	}
}

// Drops by reason print by name, and not at all when there are none.
func TestDropReasons(t *testing.T) {
	if got := DropReasons(map[string]uint64{"loss": 12, "limit": 3}); got != " (limit 3, loss 12)" {
		t.Errorf("from counts: %q", got)
	}
	if got := DropReasons(map[string]uint64(nil)); got != "" {
		t.Errorf("none: %q", got)
	}
}

func TestWriteSummaryRootless(t *testing.T) {
	d := summaryDoc()
	d.Run.Rootless = true
	var b strings.Builder
	if err := WriteSummary(&b, d, false); err != nil {
		t.Fatal(err)
	}
	if want := " seed:      99   framing: ip   kernel: 6.1.0   rootless (user namespace)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q\n%s", want, b.String())
	}
	js, err := json.Marshal(d.Run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"rootless":true`) {
		t.Errorf("run section: %s", js)
	}
	d.Run.Rootless = false
	if js, _ = json.Marshal(d.Run); strings.Contains(string(js), "rootless") {
		t.Errorf("run as root records rootless: %s", js)
	}
}
