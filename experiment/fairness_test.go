package experiment

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"wanlab/results"
)

const fairSweep = `
name: fair
vars:
  delay: [10ms, 50ms]
path:
  up: "netem delay ${delay}"
tests:
  - test: tcp_bidirectional
repeat: 2
`

// A table of Jain's fairness index: each run's two upload flows got 3 and 1
// Mbit/s, whose index is (3+1)²/(2·(9+1)) = 0.8.
func TestTableJain(t *testing.T) {
	dir := t.TempDir()
	b := &fakeBackend{edit: func(r *Run, d *results.Document) {
		for i, rate := range []float64{3, 1} {
			d.Flows[i].Direction = "up"
			for k := range d.Series[i].Samples {
				d.Series[i].Samples[k].V = rate
			}
		}
		d.Summarize()
	}}
	if _, err := Execute(context.Background(), mustLoad(t, fairSweep, false), b, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	tables, err := Tables(dir, TableOptions{Stat: "jain_up"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || len(tables[0].Rows) != 2 {
		t.Fatalf("%d tables", len(tables))
	}
	tb := tables[0]
	for i := range tb.Rows {
		c := tb.Cells[i][0]
		// Two runs per cell, each of two flows of 10 samples.
		if c.N != 2 || math.Abs(c.Summary.Mean-0.8) > 1e-12 || c.Points != 40 {
			t.Errorf("row %s: n %d, mean %v, points %d; want 2, 0.8, 40", tb.Rows[i], c.N, c.Summary.Mean, c.Points)
		}
	}
	if tb.Unit != results.RunStatUnit || strings.Join(tb.Series, ",") != "upload flows" {
		t.Errorf("unit %q, series %v", tb.Unit, tb.Series)
	}
	if c := tb.Caption(); !strings.Contains(c, "jain_up of upload flows (Idx)") {
		t.Errorf("caption %q", c)
	}

	var ce *ChoiceError
	_, err = Tables(dir, TableOptions{Stat: "jain_down"})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no run has two or more download flows") {
		t.Errorf("jain_down of runs without download flows: %v", err)
	}
	_, err = Tables(dir, TableOptions{Stat: "jain_hosts_up"})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no run has two or more upload hosts") {
		t.Errorf("jain_hosts_up of runs of one server: %v", err)
	}
	_, err = Tables(dir, TableOptions{Stat: "jain_up", Series: "TCP upload"})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `leave out --series "TCP upload"`) {
		t.Errorf("jain_up with --series: %v", err)
	}
	_, err = Tables(dir, TableOptions{Stat: "jain"})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "jain_up, jain_down") {
		t.Errorf("--stat jain: %v", err)
	}
}

// The index over hosts: each run's two upload flows went to servers of
// their own, s1 at 3 and s2 at 1 Mbit/s.
func TestTableJainHosts(t *testing.T) {
	dir := t.TempDir()
	b := &fakeBackend{edit: func(r *Run, d *results.Document) {
		for i, rate := range []float64{3, 1} {
			d.Flows[i].Direction, d.Flows[i].Client, d.Flows[i].Server = "up", "c1", []string{"s1", "s2"}[i]
			for k := range d.Series[i].Samples {
				d.Series[i].Samples[k].V = rate
			}
		}
		d.Summarize()
	}}
	if _, err := Execute(context.Background(), mustLoad(t, fairSweep, false), b, ExecOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	tables, err := Tables(dir, TableOptions{Stat: "jain_hosts_up"})
	if err != nil {
		t.Fatal(err)
	}
	tb := tables[0]
	if c := tb.Cells[0][0]; c.N != 2 || math.Abs(c.Summary.Mean-0.8) > 1e-12 || c.Points != 40 {
		t.Errorf("n %d, mean %v, points %d; want 2, 0.8, 40", c.N, c.Summary.Mean, c.Points)
	}
	if c := tb.Caption(); !strings.Contains(c, "jain_hosts_up of upload hosts (Idx)") {
		t.Errorf("caption %q", c)
	}
}
