package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"wanlab/results"
)

// Flent's tcp_4up_squarewave through `wanlab run`, with LENGTH 1 s and
// DELAY 0.2 s: its flows run for LENGTH from 0, DELAY, DELAY*5 and DELAY*3
// (flent/tests/tcp_4up_squarewave.conf), and the run lasts LENGTH+DELAY*6,
// 2.2 s. The second flow ("TCP cubic 2", CUBIC) carries data from 0.2 s to
// 1.2 s: its sender writes nothing before or after, its receiver reads
// nothing before, and after only what was queued when the sender stopped;
// Flent 2.1.1 reads the exported file and finds the flow's samples in that
// span alone.
func TestRunSquareWave(t *testing.T) {
	dir := t.TempDir()
	out := mustCLI(t, "run", "tcp_4up_squarewave", "--both", runPath, "--duration", "1s", "--delay", "200ms", "--step", "100ms",
		"-o", filepath.Join(dir, "sq.json.gz"), "--flent", filepath.Join(dir, "sq.flent.gz"))
	d, err := results.ReadFile(filepath.Join(dir, "sq.json.gz"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r := d.Run; r.LeadS != 0 || r.DurationS != 1 || r.DelayS != 0.2 || r.TotalS() < 2.2-1e-9 || r.TotalS() > 2.2+1e-9 {
		t.Errorf("run: lead %v, duration %v, delay %v, total %v; want 0, 1, 0.2 and 2.2 s", r.LeadS, r.DurationS, r.DelayS, r.TotalS())
	}
	spans := map[string][2]float64{"TCP bbr 1": {0, 1}, "TCP cubic 2": {0.2, 1.2}, "TCP cubic 3": {1, 2}, "TCP bbr 4": {0.6, 1.6}}
	ccs := map[string]string{"TCP bbr 1": "bbr", "TCP cubic 2": "cubic", "TCP cubic 3": "cubic", "TCP bbr 4": "bbr"}
	for _, f := range d.Flows {
		want := spans[f.Label]
		if f.Span == nil || !near(f.Span[0], want[0]) || !near(f.Span[1], want[1]) || f.CongestionControl != ccs[f.Label] {
			t.Errorf("%s: span %v, cc %s; want %v and %s", f.Label, f.Span, f.CongestionControl, want, ccs[f.Label])
		}
	}
	// The sender writes from 0.2 s to 1.2 s and not after (Flent's series
	// are netperf's, which ends its test at 'length'); the receiver reads
	// nothing before 0.2 s, and after 1.2 s only what was still queued
	// (in the sender's socket and on the path) when the sender stopped.
	find := func(name string) *results.Series {
		for i := range d.Series {
			if d.Series[i].Name == name {
				return &d.Series[i]
			}
		}
		for _, f := range d.Flows {
			for i := range f.Series {
				if f.Series[i].Name == name {
					return &f.Series[i]
				}
			}
		}
		t.Fatalf("no series %q:\n%s", name, out)
		return nil
	}
	s, sent := find("TCP cubic 2"), find("TCP cubic 2::sent_rate")
	var inside int
	var rcvdIn, rcvdAfter, sentAll float64
	first := math.Inf(1) // the end of the first step it wrote in
	for _, p := range sent.Samples {
		sentAll += p.V
		switch {
		case p.T <= 0.2+1e-9:
			t.Errorf("TCP cubic 2 sent at %vs, before it started at 0.2 s", p.T)
		case p.T <= 1.2+1e-9:
			if p.V > 0 {
				first = min(first, p.T)
			}
		case p.V != 0:
			t.Errorf("TCP cubic 2 sent %v Mbit/s at %vs, after it stopped at 1.2 s", p.V, p.T)
		}
	}
	for _, p := range s.Samples {
		switch {
		case p.T <= 0.2+1e-9:
			t.Errorf("TCP cubic 2 has a sample at %vs (%v Mbit/s), before it started at 0.2 s", p.T, p.V)
		case p.T <= 1.2+1e-9:
			inside++
			rcvdIn += p.V
		default:
			rcvdAfter += p.V
		}
	}
	// It connects at 0.2 s and writes in the first half of its span (a
	// busy machine may delay its connection by some steps; later steps
	// may find its socket full while the path is shared).
	if inside != 10 || first > 0.7+1e-9 || s.Window != [2]float64{0.2, 1.2} || s.Summary.N != 10 || rcvdIn <= 0 {
		t.Errorf("TCP cubic 2: %d samples in its span, first written in the step to %vs, window %v, summary of %d; want 10 steps over (0.2, 1.2], writing by 0.7 s",
			inside, first, s.Window, s.Summary.N)
	}
	if rcvdIn+rcvdAfter > sentAll*(1+1e-9) {
		t.Errorf("TCP cubic 2 received %v Mbit·step, %v of them after it stopped, of %v sent", rcvdIn+rcvdAfter, rcvdAfter, sentAll)
	}
	t.Logf("TCP cubic 2: sent %.2f Mbit in its span, received %.2f in it and %.2f after (what was queued when it stopped)", sentAll*0.1, rcvdIn*0.1, rcvdAfter*0.1)

	// The Flent file: DELAY, LENGTH and TOTAL_LENGTH as Flent's own run
	// would have them, and the flow's column null outside its span.
	file := filepath.Join(dir, "sq.flent.gz")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Metadata map[string]any        `json:"metadata"`
		XValues  []float64             `json:"x_values"`
		Results  map[string][]*float64 `json:"results"`
	}
	if err := json.NewDecoder(zr).Decode(&f); err != nil {
		t.Fatal(err)
	}
	if m := f.Metadata; m["NAME"] != "tcp_4up_squarewave" || m["DELAY"] != 0.2 || m["LENGTH"] != 1.0 || !near(m["TOTAL_LENGTH"].(float64), 2.2) {
		t.Errorf("Flent metadata: NAME %v, DELAY %v, LENGTH %v, TOTAL_LENGTH %v", m["NAME"], m["DELAY"], m["LENGTH"], m["TOTAL_LENGTH"])
	}
	for k, v := range f.Results["TCP cubic 2"] {
		x := f.XValues[k]
		if inSpan := x > 0.2+1e-9 && x <= 1.2+1e-9; inSpan != (v != nil) {
			t.Errorf("Flent's TCP cubic 2 at %vs: %v", x, v)
		}
	}
	if _, err := exec.LookPath("flent"); err != nil {
		t.Log("flent is not installed: not read by Flent")
		return
	}
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "MPLCONFIGDIR="+home)
	cmd := exec.Command("flent", "-i", file, "-f", "stats")
	cmd.Env = env
	stats, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(stats), "Traceback") {
		t.Fatalf("flent -f stats: %v\n%s", err, stats)
	}
	_, block, _ := strings.Cut(string(stats), " TCP cubic 2:\n")
	points := -1
	for _, line := range strings.Split(block, "\n") {
		if n, ok := strings.CutPrefix(line, "  Data points: "); ok {
			points, _ = strconv.Atoi(strings.TrimSpace(n))
			break
		}
	}
	if points != 10 {
		t.Errorf("flent counts %d data points of TCP cubic 2, want the 10 steps of its span:\n%s", points, stats)
	}
	png := filepath.Join(dir, "totals.png")
	cmd = exec.Command("flent", "-i", file, "-p", "totals", "-o", png)
	cmd.Env = env
	if o, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(o), "Traceback") {
		t.Errorf("flent -p totals: %v\n%s", err, o)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("flent's totals plot: %v", err)
	}
}

// A test whose flows need a congestion control the kernel has not loaded
// is refused before anything is made, naming it, the loaded ones and the
// fix.
func TestRunRefusesMissingCC(t *testing.T) {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if strings.Contains(string(b), "westwood") {
		t.Skip("skipped: this kernel has westwood loaded")
	}
	_, errOut, code := cli(t, "run", "tcp_2up_square", "--duration", "1s", "--delay", "200ms", "--step", "100ms", "-o", filepath.Join(t.TempDir(), "x.json.gz"))
	if code != 2 || !strings.Contains(errOut, "westwood") || !strings.Contains(errOut, "modprobe tcp_westwood") ||
		!strings.Contains(errOut, strings.Fields(string(b))[0]) || !strings.Contains(errOut, "TCP westwood") {
		t.Errorf("exit %d, stderr %q; want 2, naming westwood, the loaded ones and modprobe", code, errOut)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
