package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// Bad table command lines exit 2 with the fix, before anything is written.
func TestTableUsageErrors(t *testing.T) {
	empty := t.TempDir()
	notIndex := t.TempDir()
	os.WriteFile(filepath.Join(notIndex, "index.json"), []byte(`{"format":"something-else"}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table"}, "accepts 1 arg"},
		{[]string{"table", empty}, "no index.json"},
		{[]string{"table", empty, "--format", "xml"}, `--format "xml": use text, markdown or csv`},
		{[]string{"table", empty, "--where", "delay"}, "write VAR=VALUE"},
		{[]string{"table", empty, "-o", empty}, "is a directory"},
		{[]string{"table", empty, "--plot", "x.pdf"}, "--plot: \"x.pdf\": the extension .pdf is not an image format"},
	} {
		_, errOut, code := runWanlab(t, c.args...)
		msg := strings.TrimSpace(errOut)
		if code != exitUsage || !strings.Contains(msg, c.want) {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if _, errOut, code := runWanlab(t, "table", notIndex); code == 0 || !strings.Contains(errOut, "not an experiment index") {
		t.Errorf("a foreign index.json: exit %d, %q", code, errOut)
	}
}

// resultsBackend runs an experiment's runs in the test: each writes the
// synthetic document resultstest.Run builds for its test, whose main
// series' mean is what mean gives for the run, if mean is set.
type resultsBackend struct {
	mean func(r *experiment.Run) float64
}

func (resultsBackend) Keys() []string                         { return []string{"duration"} }
func (resultsBackend) Check(*experiment.Run) error            { return nil }
func (resultsBackend) Estimate(*experiment.Run) time.Duration { return time.Second }
func (b resultsBackend) Run(ctx context.Context, r *experiment.Run, path string) error {
	d := resultstest.Run(r.Test, r.Title, r.Seed, resultstest.DefaultPath)
	if s, _ := d.MainSeries(); s != nil && b.mean != nil {
		s.Summary.Mean = b.mean(r)
	}
	return results.WriteFile(ctx, path, d, outfile.Options{})
}

// e3Dir runs examples/e3.yaml (without its pauses) into a new directory
// with synthetic runs.
func e3Dir(t *testing.T) string {
	t.Helper()
	content, err := os.ReadFile("../../examples/e3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := shippedBackend{newRunner(&streams{in: strings.NewReader(""), out: io.Discard, err: io.Discard})}
	p, err := experiment.Load("e3.yaml", content, experiment.LoadOptions{Backend: b, TC: tcOptions()})
	if err != nil {
		t.Fatal(err)
	}
	p.Pause = 0
	dir := filepath.Join(t.TempDir(), "e3-fq-codel-results")
	if _, err := experiment.Execute(context.Background(), p, b, experiment.ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The obvious first command on E3, whose cases run rrul and
// tcp_bidirectional, gives a table per test (tcp_bidirectional's download
// and upload each their own) and congestion control instead of exiting 2; a view that takes one
// table names the options that choose each; a summary file gives the same
// tables as the directory.
func TestTableE3FirstCommand(t *testing.T) {
	dir := e3Dir(t)
	stdout, stderr, code := runWanlab(t, "table", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("wanlab table %s: exit %d, stderr %q", dir, code, stderr)
	}
	for _, want := range []string{
		"e3-fq-codel: mean of TCP totals (Mbits/s), mean of 3 runs ± sample std dev; cc=cubic test=rrul\n\nrate \\ qdisc   pfifo_fast",
		"e3-fq-codel: mean of TCP download (Mbits/s), mean of 3 runs ± sample std dev; cc=cubic test=tcp_bidirectional\n",
		"e3-fq-codel: mean of TCP upload (Mbits/s), mean of 3 runs ± sample std dev; cc=bbr test=tcp_bidirectional\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// --plot draws each table, named after what it is for; a graph on
	// stdout takes one, and the refusal names the options that choose it.
	graphs := t.TempDir()
	_, stderr, code = runWanlab(t, "table", dir, "--plot", filepath.Join(graphs, "e3.svg"))
	want := ""
	for _, cc := range []string{"cubic", "bbr"} {
		for _, g := range []string{"rrul", "tcp_bidirectional-TCP_download", "tcp_bidirectional-TCP_upload"} {
			want += "graph: " + filepath.Join(graphs, "e3-"+cc+"-"+g+".svg") + "\n"
		}
	}
	if code != 0 || stderr != want {
		t.Errorf("--plot of six tables: exit %d, %q; want %q", code, stderr, want)
	}
	_, stderr, code = runWanlab(t, "plot", dir, "--kind", "sweep", "-o", "-", "--format", "svg")
	if code != exitUsage || !strings.Contains(stderr, "6 tables are one graph each and the output is stdout: choose one table with --where cc=cubic --where test=rrul") {
		t.Errorf("a sweep of six tables to stdout: exit %d, %q", code, stderr)
	}
	_, stderr, code = runWanlab(t, "table", dir, "--where", "test=tcp_bidirectional")
	if code != exitUsage || !strings.Contains(stderr, `choose one with --series "TCP download" or --series "TCP upload"`) {
		t.Errorf("tcp_bidirectional alone: exit %d, %q", code, stderr)
	}

	sum := dir + ".summary.json.gz"
	if _, stderr, code := runWanlab(t, "experiment", "summarize", dir); code != 0 {
		t.Fatalf("summarize: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{
		nil,
		{"--show", "median,minmax,n,points", "--format", "csv"},
		{"--where", "test=rrul", "--series", "Ping (ms) ICMP", "--stat", "median", "--spread", "ci95", "--format", "markdown"},
	} {
		fromDir, _, codeDir := runWanlab(t, append([]string{"table", dir}, args...)...)
		fromSum, errSum, codeSum := runWanlab(t, append([]string{"table", sum}, args...)...)
		if codeDir != 0 || codeSum != 0 || fromSum != fromDir {
			t.Errorf("%q: the summary (exit %d, %q) gives\n%s\nthe directory (exit %d)\n%s", args, codeSum, errSum, fromSum, codeDir, fromDir)
		}
	}
}

// The reference and the statistics through the command line: a reference
// column and ratio per column, and the usage errors of the new flags.
func TestTableReferenceAndShowFlags(t *testing.T) {
	dir := e3Dir(t)
	ref := filepath.Join(t.TempDir(), "e3.ref.csv")
	os.WriteFile(ref, []byte("rate,qdisc,test,series,stat,value,source\n10mbit,fq_codel,rrul,,mean,9,seed 003\n"), 0o644)
	stdout, stderr, code := runWanlab(t, "table", dir, "--where", "test=rrul", "--reference", ref, "--show", "mean,ci95,n")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	for _, want := range []string{
		"mean of 3 runs ± 95 % confidence interval, n (runs); test=rrul cc=cubic\n",
		"pfifo_fast n   fq_codel",
		"fq_codel n   fq_codel ref   fq_codel ratio\n",
		"(ref: seed 003 (" + ref + "); ratio: the cell's mean / ref)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("delay,series,stat,value,source\n10ms,,mean,1,x\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reference", filepath.Join(t.TempDir(), "none.csv")}, "--reference: "},
		{[]string{"--reference", bad}, `column "delay" is not a variable of the experiment`},
		{[]string{"--show", "mean,ci", "--where", "test=rrul"}, `--show "ci": use one or several of`},
		{[]string{"--show", "mean", "--spread", "minmax", "--where", "test=rrul"}, "--spread is --show's shorthand"},
	} {
		_, stderr, code := runWanlab(t, append([]string{"table", dir}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
