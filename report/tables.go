package report

import (
	"bytes"
	"fmt"
	"strings"

	"wanlab/experiment"
	"wanlab/plot"
)

// The experiment's tables as the page shows them. This file is the one
// place the report reads experiment.Table and draws plot.Sweep, so that
// when either changes only it follows.

// tableView is one of the experiment's tables: its caption, its header,
// its rows of cells (the statistic over the repetitions and its spread),
// notes on the runs left out, and its sweep graph.
type tableView struct {
	Caption string
	Header  []string
	Rows    []tableRowView
	Notes   []string
	// Graph is the sweep graph; nil when the table has none (a single
	// row, or no sweep given).
	Graph *graph
}

type tableRowView struct {
	Value string
	Cells []tableCell
}

type tableCell struct {
	Text string
	// N is the number of runs behind the figure.
	N int
}

func buildTable(tt Table) tableView {
	t := tt.Table
	v := tableView{Caption: t.Caption()}
	corner := t.RowVar
	if t.ColVar != "" {
		corner += " \\ " + t.ColVar
	}
	v.Header = append(v.Header, corner)
	for _, c := range t.Cols {
		if t.ColVar == "" {
			c = t.Stat
		}
		v.Header = append(v.Header, c)
	}
	for i, rv := range t.Rows {
		row := tableRowView{Value: rv}
		for j := range t.Cols {
			c := t.Cells[i][j]
			row.Cells = append(row.Cells, tableCell{Text: cellText(t, c), N: c.N})
		}
		v.Rows = append(v.Rows, row)
	}
	if t.Skipped > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d runs not complete, left out.", t.Skipped))
	}
	if t.Lacking > 0 && len(t.Series) > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d runs without %s, left out.", t.Lacking, t.Series[0]))
	}
	if tt.Sweep != nil && len(t.Rows) > 1 {
		v.Graph = drawSweep(*tt.Sweep)
		v.Graph.Caption = "The table as a graph: " + t.RowVar + " along the x axis"
		if t.ColVar != "" {
			v.Graph.Caption += ", a line per " + t.ColVar
		}
		v.Graph.Caption += "."
	}
	return v
}

// cellText is a cell's figure and its spread across the repetitions, as
// the table's Spread says.
func cellText(t *experiment.Table, c experiment.Cell) string {
	if c.N == 0 {
		return "—"
	}
	s := figure(c.Summary.Mean)
	if c.N > 1 {
		switch t.Spread {
		case "stddev":
			s += " ± " + figure(c.Summary.SampleStdDev)
		case "minmax":
			s += " (" + figure(c.Summary.Min) + "–" + figure(c.Summary.Max) + ")"
		}
	}
	return s
}

// drawSweep renders a sweep graph as SVG in a data: URI, or says why it
// could not be drawn; the caller captions it.
func drawSweep(s plot.Sweep) *graph {
	gr := &graph{Kind: "sweep", Width: graphWidth, Height: singleHeight}
	var buf bytes.Buffer
	if err := plot.DrawSweep(&buf, s, plot.Options{Format: plot.SVG, Width: graphWidth, Height: singleHeight}); err != nil {
		gr.Err = strings.TrimPrefix(err.Error(), "plot: ")
		return gr
	}
	gr.Src = svgURI(buf.Bytes())
	return gr
}
