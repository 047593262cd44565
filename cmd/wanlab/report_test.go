package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wanlab/internal/outfile"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// The report's content is package report's to test; these tests hold the
// command to its inputs and outputs.

// TestReportCommand: files and a directory in, one page out, with a
// section per run in the order given.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	a := synthResults(t, dir, "a.json.gz", "first run", 1)
	b := synthResults(t, dir, "b.json", "second run", 2)
	out := filepath.Join(t.TempDir(), "r.html")
	stdout, stderr, code := runWanlab(t, "report", a, b, "-o", out, "--title", "E3 <quick>")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "report of 2 runs: "+out+"\n" {
		t.Errorf("stdout %q", stdout)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>E3 &lt;quick&gt;</title>", `id="overview"`, `id="run-1"`, `id="run-2"`, "From <code>" + a + "</code>", "From <code>" + b + "</code>"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if i, j := bytes.Index(page, []byte("Run 1: first run")), bytes.Index(page, []byte("Run 2: second run")); i < 0 || j < i {
		t.Errorf("the runs are not in the order given (at %d and %d)", i, j)
	}
}

// TestReportDefaultOutput: without -o the report goes beside the first
// input, or into the directory given; it never replaces a file, and a
// taken name gets -2.
func TestReportDefaultOutput(t *testing.T) {
	dir := t.TempDir()
	synthResults(t, dir, "c002-tcp_upload-r1.json.gz", "second", 2)
	a := synthResults(t, dir, "c001-tcp_upload-r1.json.gz", "first", 1)
	os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"format": "wanlab-experiment", "version": 1}`), 0o644)

	_, stderr, code := runWanlab(t, "report", a)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "c001-tcp_upload-r1.html")); err != nil {
		t.Error(err)
	}

	want := filepath.Join(dir, "report.html")
	page := reportTo(t, "2 runs", want, dir)
	if i, j := bytes.Index(page, []byte("Run 1: first")), bytes.Index(page, []byte("Run 2: second")); i < 0 || j < i {
		t.Errorf("the directory's runs are not in name order (at %d and %d)", i, j)
	}

	stdout, stderr, code := runWanlab(t, "report", dir)
	if second := filepath.Join(dir, "report-2.html"); code != 0 || stdout != "report of 2 runs: "+second+"\n" {
		t.Errorf("a second report to the same default name: exit %d, %q, %q; want it as %s", code, stdout, stderr, second)
	}
	if again, _ := os.ReadFile(want); !bytes.Equal(again, page) {
		t.Error("the second report changed the first one's file")
	}
}

// TestReportExperiment: an experiment's results directory, or its summary
// file, given alone gets a report by case: its table, a section per case
// with its runs folded under it; from the directory the runs' graphs over
// time, from the summary (no samples) none.
func TestReportExperiment(t *testing.T) {
	dir := t.TempDir()
	var cases []resultstest.Case
	for _, delay := range []string{"10ms", "50ms"} {
		cases = append(cases, resultstest.Case{Vars: map[string]string{"delay": delay}, Test: "tcp_upload", Path: resultstest.DefaultPath})
	}
	if _, err := resultstest.Experiment(dir, "sweep", []string{"delay"}, cases, 2, resultstest.Short, nil); err != nil {
		t.Fatal(err)
	}
	page := reportTo(t, "experiment sweep", filepath.Join(dir, "report.html"), dir)
	for _, want := range []string{`<title>wanlab report: sweep</title>`, `data-section="tables"`, `id="case-1"`, `id="case-2"`, `id="c2-r2"`, `class="series-data" id=`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the report of the directory lacks %q", want)
		}
	}
	if bytes.Contains(page, []byte(`id="run-1"`)) {
		t.Error("the report of an experiment has a section per run")
	}

	summary := filepath.Join(t.TempDir(), "sweep.json.gz")
	if _, stderr, code := runWanlab(t, "experiment", "summarize", dir, "-o", summary); code != 0 {
		t.Fatalf("summarize: exit %d: %s", code, stderr)
	}
	page = reportTo(t, "experiment sweep", strings.TrimSuffix(summary, ".json.gz")+".html", summary)
	if !bytes.Contains(page, []byte(`id="c2-r2"`)) || bytes.Contains(page, []byte(`class="series-data" id=`)) {
		t.Error("the report of a summary file lacks a run, or has graphs of samples it does not hold")
	}
}

// reportTo runs wanlab report with args, wants it to say it wrote the
// report of what to path, and returns the page.
func reportTo(t *testing.T, what, path string, args ...string) []byte {
	t.Helper()
	stdout, stderr, code := runWanlab(t, append([]string{"report"}, args...)...)
	if code != 0 || stdout != "report of "+what+": "+path+"\n" {
		t.Fatalf("wanlab report %q: exit %d, stdout %q: %s", args, code, stdout, stderr)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestReportBadInput: bad inputs exit 2, name the file and write nothing.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format": "wanlab-results", "version": 9}`), 0o644)
	wrongFormat := filepath.Join(dir, "index.json")
	os.WriteFile(wrongFormat, []byte(`{"format": "wanlab-experiment"}`), 0o644)
	good := synthResults(t, t.TempDir(), "good.json", "good", 1)
	before, _ := os.ReadFile(good)
	out := filepath.Join(t.TempDir(), "r.html")
	defer func() {
		if after, _ := os.ReadFile(good); !bytes.Equal(after, before) {
			t.Error("the results file given as the output changed")
		}
	}()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "requires at least 1 arg"},
		{[]string{"report", bad, "-o", out}, bad + ": the document is version 9, newer than this wanlab reads"},
		{[]string{"report", wrongFormat, "-o", out}, `not a wanlab results document (format "wanlab-experiment"`},
		{[]string{"report", dir, "-o", out}, bad + ": the document is version 9"},
		{[]string{"report", filepath.Join(dir, "none"), "-o", out}, "does not exist"},
		{[]string{"report", good, "-o", good}, "is the input " + good + ", which would be lost"},
	} {
		_, stderr, code := runWanlab(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q wrote %s", c.args, out)
		}
	}
}

// synthResults writes a results document shaped like those `wanlab run`
// writes for tcp_upload, to dir/name: 1 s of lead, 6 s of load and 1 s of
// tail every 0.2 s through a 10 Mbit/s bottleneck; an ICMP ping with a
// probe lost now and then; the upload flow's TCP_INFO at both ends and
// the router's view of it.
func synthResults(t *testing.T, dir, name, title string, seed int) string {
	t.Helper()
	lead, dur, tail, step := 1.0, 6.0, 1.0, 0.2
	chain := "netem delay 20ms; tbf rate 10mbit burst 32k latency 300ms"
	d := &results.Document{Run: results.Run{
		WanlabVersion: "v0.0.0-test", Argv: []string{"wanlab", "run", "tcp_upload", "--both", chain, "--title", title},
		Test: "tcp_upload", Title: title, Start: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		DurationS: dur, StepS: step, LeadS: lead, TailS: tail, Seed: uint64(seed), Framing: "ethernet",
		KernelRelease: "6.1.0-test", Path: results.Path{Up: chain, Down: chain},
	}}
	w := [2]float64{lead, lead + dur}
	up := results.Series{Name: "TCP upload", Unit: "Mbits/s", Window: w}
	ping := results.Series{Name: "Ping (ms) ICMP", Unit: "ms", Window: w}
	flow := func(key, unit string) results.Series {
		return results.Series{Name: "TCP upload::" + key, Unit: unit, Window: w}
	}
	cwnd, rtt, rcwnd, rrtt := flow("tcp_cwnd", "packets"), flow("tcp_rtt", "ms"), flow("receiver_tcp_cwnd", "packets"), flow("receiver_tcp_rtt", "ms")
	bytesOut, qdelay := flow("router_delivered_bytes", "bytes"), flow("router_queue_delay", "ms")
	for k := 0; k <= int(math.Round((lead+dur+tail)/step)); k++ {
		tt := float64(k) * step
		rate, q := 0.0, 0.0
		if tt > lead && tt <= lead+dur {
			rate = 9.5 + float64((k*7+seed)%5)/10
			q = float64((k*13+seed)%30) + 5
			cwnd.Samples = append(cwnd.Samples, results.Sample{T: tt, V: 20 + q})
			rtt.Samples = append(rtt.Samples, results.Sample{T: tt, V: 40 + q})
			rcwnd.Samples = append(rcwnd.Samples, results.Sample{T: tt, V: 10})
			rrtt.Samples = append(rrtt.Samples, results.Sample{T: tt, V: 40})
			qdelay.Samples = append(qdelay.Samples, results.Sample{T: tt, V: q})
		}
		up.Samples = append(up.Samples, results.Sample{T: tt, V: rate})
		bytesOut.Samples = append(bytesOut.Samples, results.Sample{T: tt, V: math.Round(rate * 1e6 / 8 * step)})
		p := 40 + q + float64(seed)
		if k%17 == 5 {
			p = math.NaN()
		}
		ping.Samples = append(ping.Samples, results.Sample{T: tt + 0.013, V: p})
	}
	d.Series = []results.Series{up, ping}
	d.Flows = []results.Flow{
		{ID: 1, Label: "TCP upload", Direction: "up", Protocol: "tcp", CongestionControl: "cubic",
			Series: []results.Series{cwnd, rtt, rcwnd, rrtt, bytesOut, qdelay}},
		{ID: 2, Label: "Ping (ms) ICMP", Direction: "both", Protocol: "icmp"},
	}
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	d.Summarize()
	path := filepath.Join(dir, name)
	if err := results.WriteFile(context.Background(), path, d, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	return path
}
