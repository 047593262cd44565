package main

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/internal/svgtest"
	"wanlab/plot"
)

// checkImage checks that data is a whole PNG or SVG image of w×h pixels.
func checkImage(t *testing.T, data []byte, f plot.Format, w, h int) {
	t.Helper()
	switch f {
	case plot.PNG:
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("not a PNG: %v", err)
		}
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("the PNG does not decode: %v", err)
		}
		if cfg.Width != w || cfg.Height != h {
			t.Errorf("the PNG is %d×%d, want %d×%d", cfg.Width, cfg.Height, w, h)
		}
	case plot.SVG:
		elems, err := svgtest.StartElements(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(elems) == 0 || elems[0].Name.Local != "svg" {
			t.Fatalf("the root element is %v, not svg", elems)
		}
		var gotW, gotH string
		for _, a := range elems[0].Attr {
			switch a.Name.Local {
			case "width":
				gotW = a.Value
			case "height":
				gotH = a.Value
			}
		}
		elements := len(elems)
		// An SVG's size is in points, 72 to 96 pixels.
		wantW, wantH := fmt.Sprintf("%gpt", float64(w)*72/96), fmt.Sprintf("%gpt", float64(h)*72/96)
		if gotW != wantW || gotH != wantH {
			t.Errorf("the SVG is %s × %s, want %s × %s", gotW, gotH, wantW, wantH)
		}
		// An empty frame with its axes is about 20 elements; the box
		// plot of two runs, the sparsest graph, about 40.
		if elements < 30 {
			t.Errorf("the SVG has only %d elements: nothing drawn?", elements)
		}
	}
}

// TestPlotEveryKind draws every kind of graph through the command, in
// both formats, and checks each file.
func TestPlotEveryKind(t *testing.T) {
	dir := t.TempDir()
	a := synthResults(t, dir, "a.json.gz", "fifo", 1)
	b := synthResults(t, dir, "b.json", "fq_codel", 2)
	for _, kind := range plot.Kinds() {
		if kind.FromTable() {
			continue // drawn from an experiment: TestPlotSweepIsTablePlot
		}
		for _, f := range plot.Formats() {
			inputs := []string{a, b}
			if !kind.ManyRuns() {
				inputs = inputs[:1]
			}
			out := filepath.Join(dir, fmt.Sprintf("%s.%s", kind, f))
			args := append(append([]string{"plot"}, inputs...), "--kind", string(kind), "-o", out, "--width", "900", "--height", "600")
			if kind == plot.SeriesKind {
				args = append(args, "--series", "Ping (ms) ICMP")
			}
			stdout, stderr, code := runWanlab(t, args...)
			if code != 0 {
				t.Errorf("%s %s: exit %d: %s", kind, f, code, stderr)
				continue
			}
			if want := fmt.Sprintf("%s graph of %d run", kind, len(inputs)); !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, out) {
				t.Errorf("%s %s: stdout %q", kind, f, stdout)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s.%s", kind, f), func(t *testing.T) { checkImage(t, data, f, 900, 600) })
		}
	}
}

// TestPlotDefaultOutput: without -o the graph goes beside the first input,
// named after it, the kind and the format; it never replaces a file, and
// a taken name gets -2.
func TestPlotDefaultOutput(t *testing.T) {
	dir := t.TempDir()
	a := synthResults(t, dir, "run1.json.gz", "one", 1)
	_, stderr, code := runWanlab(t, "plot", a)
	want := filepath.Join(dir, "run1.all_scaled.png")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("no %s: %v", want, err)
	}
	checkImage(t, data, plot.PNG, plot.DefaultWidth, plot.DefaultHeight)

	stdout, stderr, code := runWanlab(t, "plot", a)
	second := filepath.Join(dir, "run1.all_scaled-2.png")
	if code != 0 || stdout != "all_scaled graph of 1 run: "+second+"\n" {
		t.Errorf("a second plot to the same default name: exit %d, %q, %q; want it beside, as %s", code, stdout, stderr, second)
	}
	if again, _ := os.ReadFile(want); !bytes.Equal(again, data) {
		t.Error("the second plot changed the first one's file")
	}

	_, stderr, code = runWanlab(t, "plot", a, "--kind", "ping_cdf", "--format", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "run1.ping_cdf.svg")); err != nil {
		t.Error(err)
	}
}

// TestPlotDirectory: a directory's results files are all drawn, in name
// order, and an experiment's index beside them is passed over.
func TestPlotDirectory(t *testing.T) {
	dir := t.TempDir()
	synthResults(t, dir, "c002-tcp_upload-r1.json.gz", "second", 2)
	synthResults(t, dir, "c001-tcp_upload-r1.json.gz", "first", 1)
	os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"format": "wanlab-experiment", "version": 1, "cases": []}`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not JSON"), 0o644)
	stdout, stderr, code := runWanlab(t, "plot", dir, "--kind", "box", "--format", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := filepath.Join(dir, "box.svg")
	if !strings.Contains(stdout, "box graph of 2 runs: "+want) {
		t.Errorf("stdout %q", stdout)
	}
	data, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, data, plot.SVG, plot.DefaultWidth, plot.DefaultHeight)
	// The box plot labels its boxes by the runs' titles, in name order.
	if i, j := bytes.Index(data, []byte(">first")), bytes.Index(data, []byte(">second")); i < 0 || j < 0 || i > j {
		t.Errorf("the runs are not labelled first, second in order (at %d and %d)", i, j)
	}
}

// TestPlotToStdout: -o - writes the image on stdout and nothing else.
func TestPlotToStdout(t *testing.T) {
	a := synthResults(t, t.TempDir(), "a.json.gz", "a", 1)
	stdout, stderr, code := runWanlab(t, "plot", a, "-o", "-", "--format", "svg", "--width", "640", "--height", "480")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkImage(t, []byte(stdout), plot.SVG, 640, 480)
}

// TestPlotBadInput: every bad input exits 2 with a message that names the
// problem and the fix, and writes nothing.
func TestPlotBadInput(t *testing.T) {
	dir := t.TempDir()
	a := synthResults(t, dir, "a.json.gz", "a", 1)
	b := synthResults(t, dir, "b.json.gz", "b", 2)
	flent := filepath.Join(dir, "x.flent.json")
	os.WriteFile(flent, []byte(`{"x_values": [0], "raw_values": {}, "results": {}, "metadata": {}}`), 0o644)
	notJSON := filepath.Join(dir, "broken.json.gz")
	os.WriteFile(notJSON, []byte("\x1f\x8bnot gzip"), 0o644)
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "index.json"), []byte(`{"format": "wanlab-experiment"}`), 0o644)
	out := filepath.Join(t.TempDir(), "g.png")
	checkUsageErrors(t, out, []usageCase{
		{[]string{"plot"}, "requires at least 1 arg"},
		{[]string{"plot", filepath.Join(dir, "missing.json.gz")}, "does not exist: give results files"},
		{[]string{"plot", flent, "-o", out}, "Flent data file"},
		{[]string{"plot", notJSON, "-o", out}, "broken.json.gz"},
		{[]string{"plot", empty, "-o", out}, "holds no results files"},
		{[]string{"plot", a, "--kind", "totals", "-o", out}, `unknown graph "totals": choose one of all_scaled`},
		{[]string{"plot", a, b, "--kind", "tcp_cwnd_rtt", "-o", out}, "draw each on its own"},
		{[]string{"plot", a, "--kind", "box", "--series", "No such", "-o", out}, "No such"},
		{[]string{"plot", a, "-o", filepath.Join(dir, "g.jpg")}, "end the name in .png or .svg"},
		{[]string{"plot", a, "-o", out, "--format", "svg"}, "make them agree"},
		{[]string{"plot", a, "--format", "gif", "-o", "-"}, "give png or svg"},
		{[]string{"plot", a, "--width", "10", "-o", out}, "--width 10: give 320 to 8000 pixels"},
		// 0 is no default on the command line: the default is written
		// out in the flag's help.
		{[]string{"plot", a, "--width", "0", "-o", out}, "--width 0: give 320 to 8000 pixels"},
		{[]string{"plot", a, "--height", "0", "-o", out}, "--height 0: give 240 to 8000 pixels"},
		{[]string{"plot", a, "--height", "-600", "-o", out}, "--height -600: give 240 to 8000 pixels"},
		{[]string{"plot", a, "--width", "9223372036854775807", "-o", out}, "--width 9223372036854775807: give 320 to 8000 pixels"},
		{[]string{"plot", a, "-o", dir}, "is a directory: give a file name, e.g. " + dir + "/all_scaled.png"},
	})
}

// usageCase is a command line that must be refused with exit 2 and a
// message that says want.
type usageCase struct {
	args []string
	want string
}

// checkUsageErrors runs each case and checks that it is refused, and that
// out, the file the command line names, was not written.
func checkUsageErrors(t *testing.T, out string, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		_, stderr, code := runWanlab(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q wrote %s", c.args, out)
		}
	}
}

// TestGraphOutputs holds plot, report and export to the rules every
// output of wanlab follows (see pathCases).
func TestGraphOutputs(t *testing.T) {
	withUmask022(t)
	in := synthResults(t, t.TempDir(), "a.json.gz", "a", 1)
	for _, cmd := range []struct {
		name, flag, label, suggest string
		args                       []string
		check                      func(t *testing.T, data []byte)
	}{
		{"plot", "-o", "--output", "all_scaled.png", []string{"plot", in, "--width", "400", "--height", "300"},
			func(t *testing.T, data []byte) { checkImage(t, data, plot.PNG, 400, 300) }},
		{"report", "-o", "--output", "report.html", []string{"report", in},
			func(t *testing.T, data []byte) {
				if !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) || !bytes.HasSuffix(bytes.TrimSpace(data), []byte("</html>")) {
					t.Errorf("not a whole HTML page: %d bytes", len(data))
				}
			}},
		{"export", "--flent", "--flent", "run.flent.gz", []string{"export", in},
			func(t *testing.T, data []byte) {
				if !bytes.HasPrefix(data, []byte("\x1f\x8b")) && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
					t.Errorf("not a Flent data file (gzip or JSON): %d bytes", len(data))
				}
			}},
	} {
		for _, pc := range pathCases(cmd.label, cmd.suggest) {
			t.Run(cmd.name+"/"+pc.name, func(t *testing.T) {
				run := func(path, _ string) (string, string, int) {
					return runWanlab(t, append(cmd.args, cmd.flag, path)...)
				}
				fromStdout := func(t *testing.T, stdout string) { cmd.check(t, []byte(stdout)) }
				checkPathCase(t, pc, run, fromStdout, cmd.check)
			})
		}
	}
}
