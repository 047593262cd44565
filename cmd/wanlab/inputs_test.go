package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/internal/outfile"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// Tests of what the views (show, plot, report, table, export, experiment
// merge) do with hostile or broken inputs.

// writeBomb writes a results file of 1.3 MB of gzip holding 300 MiB of
// JSON, a valid document but for its size (white space between two keys),
// made of gzip members repeated, so that the test costs no more than
// reading it.
func writeBomb(t *testing.T, path string) {
	t.Helper()
	member := func(text string) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write([]byte(text))
		zw.Close()
		return b.Bytes()
	}
	data := member(`{"format":"wanlab-results","version":1,"run":{"test":"ping","step_s":0.2,"framing":"ip"},`)
	spaces := member(strings.Repeat(" ", 1<<20))
	for range 300 {
		data = append(data, spaces...)
	}
	data = append(data, member(`"series":[]}`)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestViewsRefuseABomb: show, and plot of a directory holding one, refuse
// a decompression bomb with exit 2, naming it and the bound, after reading
// only the bound of it: show used to read it whole into memory.
func TestViewsRefuseABomb(t *testing.T) {
	dir := t.TempDir()
	synthResults(t, dir, "a.json.gz", "a", 1)
	bomb := filepath.Join(dir, "bomb.json.gz")
	writeBomb(t, bomb)
	out := filepath.Join(t.TempDir(), "g.png")
	for _, args := range [][]string{{"show", bomb}, {"plot", dir, "-o", out}} {
		_, stderr, code := runWanlab(t, args...)
		if code != exitUsage || !strings.Contains(stderr, bomb+": more than "+"256 MiB of JSON") {
			t.Errorf("wanlab %q: exit %d, %q; want 2 naming %s and the bound", args, code, stderr, bomb)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("plot wrote a graph")
	}
}

// TestViewsRefuseADocumentWithoutARun: every view refuses a document that
// has a format and a version and nothing else, with exit 2 and one message
// (show printed a run of year 1 and exited 0, where plot refused it).
func TestViewsRefuseADocumentWithoutARun(t *testing.T) {
	dir := t.TempDir()
	norun := filepath.Join(dir, "norun.json")
	os.WriteFile(norun, []byte(`{"format":"`+results.Format+`","version":1}`), 0o644)
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{"show", norun}, {"show", norun, "--json"}, {"plot", norun, "-o", out + ".png"},
		{"report", norun, "-o", out + ".html"}, {"export", "--flent", out + ".flent", norun},
	} {
		stdout, stderr, code := runWanlab(t, args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, norun+`: the document has no "run" key`) {
			t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q; want 2 and no run key", args, code, stdout, stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the views wrote %d files", len(entries)-1)
	}
}

// TestExportRefusesATestFlentLacks: export --flent of a run of a test
// that neither Flent nor wanlab has exits 2 naming the input and its test,
// and creates no output (it exited 1 naming the output file); a run of a
// summary of a run (no samples) is refused as well; a run of a test of
// wanlab's own exports under the Flent test of its layout (it exited 2
// too).
func TestExportRefusesATestFlentLacks(t *testing.T) {
	dir := t.TempDir()
	in := synthResults(t, dir, "tfrc.json.gz", "tfrc", 1)
	doc, err := results.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	doc.Run.Test = "tcp_5up"
	if err := results.WriteFile(context.Background(), in, doc, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.flent.gz")
	_, stderr, code := runWanlab(t, "export", "--flent", out, in)
	if code != exitUsage || !strings.Contains(stderr, in+": a tcp_5up run: Flent has no such test") || strings.Contains(stderr, out) {
		t.Errorf("export of a tcp_5up run: exit %d, %q; want 2 naming the input and its test", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("export created its output")
	}

	doc.Run.Test = "tcp_upload"
	if err := results.WriteFile(context.Background(), in, doc.WithoutSamples(), outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runWanlab(t, "export", "--flent", out, in); code != exitUsage || !strings.Contains(stderr, "this is a summary of a run") {
		t.Errorf("export of a summary of a run: exit %d, %q; want 2 saying it has no samples", code, stderr)
	}

	doc.Run.Test = "tfrc_upload"
	doc.Series[0].Name, doc.Flows[0].Label = "TFRC upload", "TFRC upload"
	for i := range doc.Flows[0].Series {
		s := &doc.Flows[0].Series[i]
		s.Name = "TFRC upload" + strings.TrimPrefix(s.Name, "TCP upload")
	}
	if err := results.WriteFile(context.Background(), in, doc, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runWanlab(t, "export", "--flent", "-", in); code != 0 ||
		!strings.Contains(stdout, `"NAME":"tcp_upload"`) || !strings.Contains(stdout, `"TITLE":"wanlab tfrc_upload as Flent's tcp_upload: tfrc"`) ||
		!strings.Contains(stdout, `"TCP upload":[`) || strings.Contains(stdout, `"TFRC upload":[`) {
		t.Errorf("export of a tfrc_upload run: exit %d, %q; want it as tcp_upload", code, stderr)
	}
}

// runWithin is runWanlab that fails the test, rather than hanging it, when
// the command takes longer than limit.
func runWithin(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stdout, stderr, code = runWanlab(t, args...)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("wanlab %q still runs after %v", args, limit)
	}
	return stdout, stderr, code
}

// TestViewsOfADirectoryLeaveOutWhatHoldsNoRun: plot and report of a
// directory leave out, each with a warning naming it, a run cut short, a
// FIFO and a device named like results files (never opened: plot and
// report hung on the FIFO), and a document without a run; an experiment's
// index is passed over in silence. The rule is the one a table and a merge
// follow: such a file is a run not made.
func TestViewsOfADirectoryLeaveOutWhatHoldsNoRun(t *testing.T) {
	dir := t.TempDir()
	synthResults(t, dir, "a.json.gz", "a", 1)
	whole, _ := os.ReadFile(synthResults(t, t.TempDir(), "b.json.gz", "b", 2))
	os.WriteFile(filepath.Join(dir, "b.json.gz"), whole[:len(whole)/2], 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, "c.json.gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "d.json"))
	os.WriteFile(filepath.Join(dir, "e.json"), []byte(`{"format":"wanlab-results","version":1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"format":"wanlab-experiment","version":1}`), 0o644)
	out := t.TempDir()
	for _, c := range []struct{ args []string }{
		{[]string{"plot", dir, "-o", filepath.Join(out, "g.svg")}},
		{[]string{"report", dir, "-o", filepath.Join(out, "r.html")}},
	} {
		stdout, stderr, code := runWithin(t, 10*time.Second, c.args...)
		if code != 0 || !strings.Contains(stdout, "of 1 run: ") {
			t.Errorf("wanlab %q: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
		for _, want := range []string{
			"b.json.gz: the file is cut short", "c.json.gz is a FIFO, not a regular file",
			"d.json is a character device", `e.json: the document has no "run" key`,
		} {
			if !strings.Contains(stderr, "wanlab: warning: "+filepath.Join(dir, want)) {
				t.Errorf("wanlab %q: stderr lacks %q:\n%s", c.args, want, stderr)
			}
		}
		if strings.Count(stderr, "left out, as a run not made") != 4 {
			t.Errorf("wanlab %q: stderr:\n%s", c.args, stderr)
		}
	}
}

// synthBackend runs an experiment's runs in the test: each writes a
// synthResults document.
type synthBackend struct{ t *testing.T }

func (synthBackend) Keys() []string                         { return nil }
func (synthBackend) Check(*experiment.Run) error            { return nil }
func (synthBackend) Estimate(*experiment.Run) time.Duration { return time.Second }
func (b synthBackend) Run(_ context.Context, r *experiment.Run, path string) error {
	synthResults(b.t, filepath.Dir(path), filepath.Base(path), r.Title, int(r.Seed%97))
	return nil
}

// experimentDir runs a four-case experiment of tcp_upload runs into a new
// directory, the cases of shard s only.
func experimentDir(t *testing.T, s experiment.Shard) string {
	t.Helper()
	const file = "name: tiny\nvars:\n  delay: [10ms, 20ms, 30ms, 40ms]\npath:\n  both: \"netem delay ${delay}\"\ntests:\n  - test: tcp_upload\n"
	b := synthBackend{t}
	p, err := experiment.Load("tiny.yaml", []byte(file), experiment.LoadOptions{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := experiment.Execute(context.Background(), p, b, experiment.ExecOptions{Dir: dir, Shard: s}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMergeAndTableCommands: experiment merge and table count a run whose
// file is missing or cut short as not run (both exited 1 on it), merge
// follows its own advice for a duplicate, and refuses with exit 2 to merge
// into one of its inputs, leaving nothing behind when it refuses.
func TestMergeAndTableCommands(t *testing.T) {
	s1, s2, whole := experimentDir(t, experiment.Shard{K: 1, N: 2}), experimentDir(t, experiment.Shard{K: 2, N: 2}), experimentDir(t, experiment.Shard{})
	const c1 = "c001-tcp_upload-r1.json.gz"
	doc, _ := results.ReadFile(filepath.Join(whole, c1))
	doc.Run.Title = "another result"
	results.WriteFile(context.Background(), filepath.Join(whole, c1), doc, outfile.Options{})
	out := filepath.Join(t.TempDir(), "merged")

	_, stderr, code := runWanlab(t, "experiment", "merge", s1, whole, "-o", out)
	if code != exitUsage || !strings.Contains(stderr, "run "+c1+" is complete in both "+s1+" and "+whole+", with different results: remove it from one of them") {
		t.Fatalf("a duplicate: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the refused merge made its output directory")
	}
	os.Remove(filepath.Join(whole, c1))
	if _, stderr, code = runWanlab(t, "experiment", "merge", s1, whole, "-o", out); code != 0 || !strings.Contains(stderr, "4 runs complete, 0 partial, 0 failed, 0 not run") {
		t.Errorf("after removing the duplicate: exit %d, %q", code, stderr)
	}
	before, _ := os.ReadFile(filepath.Join(s1, experiment.IndexName))
	if _, stderr, code = runWanlab(t, "experiment", "merge", s1, s2, "-o", s1); code != exitUsage || !strings.Contains(stderr, "-o "+s1+" is "+s1+", one of the directories to merge") {
		t.Errorf("merge into a shard: exit %d, %q", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(s1, experiment.IndexName)); !bytes.Equal(after, before) {
		t.Error("the refused merge changed the shard's index")
	}

	// whole: c001 removed above; c002 cut short.
	const c2 = "c002-tcp_upload-r1.json.gz"
	b, _ := os.ReadFile(filepath.Join(whole, c2))
	os.WriteFile(filepath.Join(whole, c2), b[:len(b)/2], 0o644)
	stdout, stderr, code := runWanlab(t, "table", whole)
	if code != 0 || !strings.Contains(stdout, "(2 runs not complete, left out)") ||
		stderr != "wanlab: warning: "+filepath.Join(whole, c2)+": the file is cut short (it ends inside the document): left out, as a run not made\n" {
		t.Errorf("table with a run missing and one cut short: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestViewsNeverWriteOverTheirInputs: an output named as one of the files
// a view reads (a results file given by name, or the index or a run of a
// directory it reads) is refused with exit 2 and the file stays as it was:
// report of an experiment with -o one of its runs replaced that run with
// the page.
func TestViewsNeverWriteOverTheirInputs(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []resultstest.Case{{Vars: map[string]string{"rate": "10mbit"}, Test: "tcp_upload", Path: resultstest.DefaultPath}}
	ix, err := resultstest.Experiment(exp, "x", []string{"rate"}, cases, 2, resultstest.Short, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(exp, ix.Cases[0].Runs[0].File)
	index := filepath.Join(exp, experiment.IndexName)
	runs := filepath.Join(dir, "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	single := synthResults(t, runs, "a.json.gz", "a", 1)
	synthResults(t, runs, "b.json.gz", "b", 2)
	before := map[string][]byte{}
	for _, p := range []string{run, index, single} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = b
	}
	for _, args := range [][]string{
		{"report", exp, "-o", run},
		{"report", exp, "-o", index},
		{"report", runs, "-o", single},
		{"report", single, "-o", single},
		{"report", exp, "--compare", runs, "-o", single},
		{"compare", runs, exp, "-o", index},
		{"compare", "-o", single, single, "--", single},
		{"table", exp, "-o", index},
		{"experiment", "summarize", exp, "-o", run},
		{"export", "--flent", single, single},
	} {
		_, errOut, code := runWanlab(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "which would be lost: give another name") {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 refusing to lose an input", args, code, errOut)
		}
	}
	for p, b := range before {
		if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
			t.Errorf("%s changed (%v)", p, err)
		}
	}
}
