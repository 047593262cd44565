package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/internal/outfile"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// TestReportCompare: report A --compare B adds the section "Comparison
// with B", for runs and for an experiment by case, with twice the rate's
// throughput marked significant.
func TestReportCompare(t *testing.T) {
	dir := t.TempDir()
	base, fast := filepath.Join(dir, "base"), filepath.Join(dir, "fast")
	writeRuns(t, base, 10, 1, 5)
	writeRuns(t, fast, 20, 11, 5)
	out := filepath.Join(dir, "out.html")
	page := reportTo(t, "5 runs", out, base, "--compare", fast, "-o", out)
	for _, want := range []string{`<section id="comparison"`, "Comparison with " + fast, "A: " + base + " (5 runs)", `<tr class="significant"><th scope="row" class="name">TCP upload</th><td>mean</td>`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the report of runs lacks %q", want)
		}
	}

	var exps []string
	for i, rate := range []float64{10, 20} {
		exp := filepath.Join(dir, fmt.Sprintf("exp%d", i+1))
		if err := os.MkdirAll(exp, 0o755); err != nil {
			t.Fatal(err)
		}
		var cases []resultstest.Case
		for _, delay := range []float64{20, 80} {
			cases = append(cases, resultstest.Case{Vars: map[string]string{"delay": fmt.Sprintf("%gms", delay)}, Test: "tcp_upload",
				Path: resultstest.Path{RateMbit: rate, BaseRTTMs: delay, BloatMs: 30}})
		}
		if _, err := resultstest.Experiment(exp, "x", []string{"delay"}, cases, 3, resultstest.Short, nil); err != nil {
			t.Fatal(err)
		}
		exps = append(exps, exp)
	}
	out = filepath.Join(dir, "exp.html")
	page = reportTo(t, "experiment x", out, exps[0], "--compare", exps[1], "-o", out)
	for _, want := range []string{"Comparison with " + exps[1], "delay=20ms, tcp_upload: 3 runs in A, 3 in B", "delay=80ms, tcp_upload: 3 runs in A, 3 in B", `<tr class="significant">`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the report of an experiment lacks %q", want)
		}
	}
}

// TestReportCompareBad: a --compare that compare would refuse exits 2
// with compare's message and writes nothing.
func TestReportCompareBad(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base")
	runs := writeRuns(t, base, 10, 1, 2)
	index := filepath.Join(dir, "index.json")
	os.WriteFile(index, []byte(`{"format": "wanlab-experiment"}`), 0o644)
	download := filepath.Join(dir, "download.json.gz")
	if err := results.WriteFile(context.Background(), download, resultstest.Run("tcp_download", "", 1, resultstest.DefaultPath), outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none")
	out := filepath.Join(dir, "out.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--compare", none, "-o", out}, none + " does not exist: give a results directory, an experiment's summary file, or results files"},
		{[]string{"--compare", index, "-o", out}, "not a wanlab results document"},
		{[]string{"--compare", download, "-o", out}, "no case of " + base + " matches one of " + download},
		{[]string{"--compare", runs[0], "--compare", runs[1], "-o", out}, "--compare is given 2 times"},
		// The default output, beside the input, is not written either.
		{[]string{"--compare", none}, "does not exist"},
	} {
		stdout, stderr, code := runWanlab(t, append([]string{"report", base}, c.args...)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("report %q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
		for _, p := range []string{out, filepath.Join(base, "report.html")} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("report %q wrote %s", c.args, p)
			}
		}
	}
}
