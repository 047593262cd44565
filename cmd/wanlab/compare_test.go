package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/internal/outfile"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// writeRuns writes n synthetic tcp_upload runs across a bottleneck of
// rate Mbit/s into dir, as run-1.json.gz ..., and returns their paths.
func writeRuns(t *testing.T, dir string, rate float64, seed uint64, n int) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("run-%d.json.gz", i+1))
		d := resultstest.Run("tcp_upload", "", seed+uint64(i), resultstest.Path{RateMbit: rate, BaseRTTMs: 40, BloatMs: 60})
		if err := results.WriteFile(context.Background(), p, d, outfile.Options{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// A malformed condition, statistic, format or choice exits 2 with what to
// write, before any file is read (the paths do not exist); so do sides
// that are not results.
func TestCompareUsageErrors(t *testing.T) {
	dir := t.TempDir()
	runs := writeRuns(t, filepath.Join(dir, "runs"), 10, 1, 2)
	exp := filepath.Join(dir, "exp")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := resultstest.Experiment(exp, "x", []string{"delay"}, []resultstest.Case{{Vars: map[string]string{"delay": "10ms"}, Test: "tcp_upload", Path: resultstest.DefaultPath}}, 1, resultstest.Short, nil); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", none}, "give two sides, A B, or several results files a side as A... -- B... (got 1 argument;"},
		{[]string{"compare", none, none, none}, "got 3 arguments;"},
		{[]string{"compare", "--", none}, "give A's results before -- and B's after it"},
		{[]string{"compare", none, "--"}, "give A's results before -- and B's after it"},
		{[]string{"compare", none, none, "--fail-if", "TCP upload mean < 5%"}, `--fail-if "TCP upload mean < 5%": give the bound its sign, -5% or +5%`},
		{[]string{"compare", none, none, "--fail-if", "TCP upload sum mean -5%"}, "no comparison: write SERIES STAT OP BOUND"},
		{[]string{"compare", none, none, "--fail-if", "TCP upload avg < -5%"}, `"avg" is not a statistic`},
		{[]string{"compare", none, none, "--stat", "mean,avg"}, `--stat "avg": use one of mean, median, min, max, p90, p99, stddev, variance, total, or all`},
		{[]string{"compare", none, none, "--format", "xml"}, `--format "xml": use text, markdown, csv, json`},
		{[]string{"compare", none, none, "--confidence", "95"}, "--confidence 95: give a number between 0 and 1"},
		{[]string{"compare", none, none, "--where-a", "cc"}, `--where-a "cc": write VAR=VALUE`},
		{[]string{"compare", none, "--", none, "--stat", "mean"}, "--stat after --: options go before A's results"},
		{[]string{"compare", none, runs[0]}, none + " does not exist: give a results directory, an experiment's summary file, or results files"},
		{[]string{"compare", runs[0], filepath.Join(exp, "index.json")}, "not a wanlab results document"},
		{[]string{"compare", exp, runs[0], "--", runs[1]}, exp + " is an experiment's results directory: give it alone as a side"},
		{[]string{"compare", runs[0], runs[1], "--series", "TCP download"}, `--series "TCP download": no case of both`},
		{[]string{"compare", runs[0], runs[1], "--fail-if", "TCP download mean < -5%"}, `--fail-if "TCP download mean < -5%": no case of both`},
		{[]string{"compare", exp, runs[1], "--where", "delay=99ms"}, `--where delay=99ms: delay has no value "99ms"`},
	} {
		out, errOut, code := runWanlab(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// The exit status is the gate: 0 when no condition holds, 1 when one
// does (with the comparison printed all the same), and the forms of a
// side (a directory of runs, files around --, an experiment's directory
// and its summary file) give the same comparison.
func TestCompareExitStatus(t *testing.T) {
	dir := t.TempDir()
	base := writeRuns(t, filepath.Join(dir, "base"), 10, 1, 5)
	fast := writeRuns(t, filepath.Join(dir, "fast"), 20, 11, 5)

	out, errOut, code := runWanlab(t, "compare", filepath.Join(dir, "base"), filepath.Join(dir, "fast"))
	if code != exitOK || errOut != "" || !strings.Contains(out, "A: "+filepath.Join(dir, "base")+" (5 runs)") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	mean := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "TCP upload ") {
			mean = l
		}
	}
	if !strings.Contains(mean, " mean ") || !strings.HasSuffix(strings.TrimSpace(mean), "yes") {
		t.Errorf("twice the rate is not a significant change of TCP upload's mean: %q\n%s", mean, out)
	}

	args := append(append(append([]string{"compare"}, base...), "--"), fast...)
	for _, c := range []struct {
		conds []string
		code  int
	}{
		{[]string{"TCP upload mean < -5%"}, exitOK},
		{[]string{"TCP upload mean > +50%"}, exitFailure},
		{[]string{"TCP upload mean < -5%", "TCP upload median > +5"}, exitFailure},
		{[]string{"TCP upload mean > +500%"}, exitOK},
	} {
		a := append([]string{}, args[:1]...)
		for _, cond := range c.conds {
			a = append(a, "--fail-if", cond)
		}
		a = append(a, args[1:]...)
		out, errOut, code := runWanlab(t, a...)
		held := strings.Count(errOut, "holds: B − A is")
		if code != c.code || !strings.Contains(out, "Conditions (--fail-if):") || (code == exitFailure) != (held > 0) {
			t.Errorf("%q: exit %d, want %d; stderr %q\n%s", c.conds, code, c.code, errOut, out)
		}
	}

	// A single run a side: the difference is judged, never significant.
	out, errOut, code = runWanlab(t, "compare", base[0], fast[0], "--fail-if", "TCP upload mean > +50%", "--format", "json")
	var j struct {
		Tests      int  `json:"tests"`
		Held       bool `json:"held"`
		Conditions []struct {
			Interval bool `json:"interval"`
		} `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != exitFailure || j.Tests != 0 || !j.Held || j.Conditions[0].Interval ||
		!strings.Contains(errOut, "(no interval: a side has one run)") {
		t.Errorf("one run a side: exit %d, %v, %+v, stderr %q", code, err, j, errOut)
	}

	// An experiment against itself, from its directory and from its
	// summary: every case meets itself and nothing differs.
	exp := filepath.Join(dir, "exp")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	var cases []resultstest.Case
	for _, rate := range []float64{10, 20} {
		cases = append(cases, resultstest.Case{Vars: map[string]string{"rate": fmt.Sprintf("%gmbit", rate)}, Test: "tcp_upload",
			Path: resultstest.Path{RateMbit: rate, BaseRTTMs: 40, BloatMs: 60}})
	}
	if _, err := resultstest.Experiment(exp, "x", []string{"rate"}, cases, 3, resultstest.Short, nil); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "exp.summary.json.gz")
	if _, errOut, code := runWanlab(t, "experiment", "summarize", exp, "-o", summary); code != exitOK {
		t.Fatalf("summarize: %s", errOut)
	}
	out, errOut, code = runWanlab(t, "compare", exp, summary, "--fail-if", "TCP upload mean < -1%", "--format", "markdown", "-o", filepath.Join(dir, "same.md"))
	md, _ := os.ReadFile(filepath.Join(dir, "same.md"))
	if code != exitOK || out != "" || !strings.Contains(string(md), "**rate=10mbit, tcp_upload: 3 runs in A, 3 in B**") ||
		!strings.Contains(string(md), "**rate=20mbit, tcp_upload: 3 runs in A, 3 in B**") || strings.Contains(string(md), "| yes |") {
		t.Errorf("an experiment against its summary: exit %d, stdout %q, stderr %q\n%s", code, out, errOut, md)
	}
	// Its cases against each other: 20 Mbit/s is found twice 10.
	out, errOut, code = runWanlab(t, "compare", exp, exp, "--where-a", "rate=10mbit", "--where-b", "rate=20mbit", "--stat", "mean", "--format", "csv", "--fail-if", "TCP upload mean > +50%")
	if code != exitFailure || !strings.HasPrefix(out, "a_rate,b_rate,a_test,b_test,series,") || !strings.Contains(out, "10mbit,20mbit,tcp_upload,tcp_upload,TCP upload,mean,Mbits/s,3,3,") {
		t.Errorf("10 against 20 Mbit/s in one experiment: exit %d, stderr %q\n%s", code, errOut, out)
	}
}
