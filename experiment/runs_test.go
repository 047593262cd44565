package experiment

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wanlab/internal/outfile"
	"wanlab/results"
)

// A summary file gives the same tables as the directory it was made from,
// in a fraction of its size, and keeps the runs that are not complete with
// their status.
func TestSummaryGivesTheSameTables(t *testing.T) {
	dir := runTableSweep(t, tableSweep)
	// One run missing, one cut short: both not run, in both forms.
	ix, _ := ReadIndex(dir)
	gone, cut := ix.Cases[0].Runs[0].File, ix.Cases[1].Runs[0].File
	os.Remove(filepath.Join(dir, gone))
	b, _ := os.ReadFile(filepath.Join(dir, cut))
	os.WriteFile(filepath.Join(dir, cut), b[:len(b)/2], 0o644)

	sum := filepath.Join(t.TempDir(), "tab.summary.json.gz")
	if _, _, err := Summarize(context.Background(), dir, sum, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	rs, err := OpenRuns(sum, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Summary || rs.Run(gone).Status != StatusPending || rs.Run(cut).Status != StatusPending {
		t.Errorf("summary %v; the missing run %+v and the cut one %+v should be not run", rs.Summary, rs.Run(gone), rs.Run(cut))
	}
	other := ix.Cases[2].Runs[0].File
	if d := rs.Run(other).Doc; d == nil || !d.Run.SamplesDropped || len(d.Series) == 0 || len(d.Series[0].Samples) != 0 {
		t.Errorf("a complete run's document in the summary: %+v", d)
	}
	for _, o := range []TableOptions{
		{},
		{Rows: "delay", Cols: "transport", Where: map[string][]string{"variant": {"jitter"}}},
		{Series: "UDP upload", Stat: "median", Spread: "minmax"},
	} {
		a, errA := Tables(dir, o)
		b, errB := Tables(sum, o)
		if errA != nil || errB != nil {
			t.Fatalf("%+v: %v, %v", o, errA, errB)
		}
		var ta, tb bytes.Buffer
		for _, x := range a {
			x.WriteText(&ta)
		}
		for _, x := range b {
			x.WriteText(&tb)
		}
		if ta.String() != tb.String() {
			t.Errorf("%+v: the summary's tables differ:\n%s\nfrom the directory's:\n%s", o, tb.String(), ta.String())
		}
	}
	var whole int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			whole += info.Size()
		}
	}
	if st, err := os.Stat(sum); err != nil || st.Size()*3 > whole {
		t.Errorf("summary %d bytes, the directory %d: want it far smaller", st.Size(), whole)
	}
	if _, _, err := Summarize(context.Background(), sum, filepath.Join(t.TempDir(), "x"), outfile.Options{}); err == nil {
		t.Error("a summary of a summary was made")
	}
}

// What is not a summary file is refused with a message that names it.
func TestOpenRunsRefusesWhatIsNoSummary(t *testing.T) {
	dir := t.TempDir()
	gz := func(name, text string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(text))
		zw.Close()
		p := filepath.Join(dir, name)
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	p := mustLoad(t, tableSweep, false)
	doc := filepath.Join(dir, "run.json.gz")
	if err := results.WriteFile(context.Background(), doc, fakeDoc(p.Runs(Shard{})[0]), outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{doc, "not a summary file of wanlab's"},
		{gz("newer.json.gz", `{"format":"wanlab-experiment-summary","version":9,"index":{}}`), "newer than this wanlab reads"},
		{gz("noindex.json.gz", `{"format":"wanlab-experiment-summary","version":1}`), "has no index"},
		{gz("junk.json.gz", `[1,2`), "not a summary file"},
	} {
		_, err := OpenRuns(c.path, OpenOptions{})
		var de *DirError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a DirError saying %q", filepath.Base(c.path), err, c.want)
		}
	}
}
