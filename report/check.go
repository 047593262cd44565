package report

import (
	"fmt"
	"strconv"
	"strings"

	"wanlab/results"
)

// fidelityView is a run's fidelity check as the page shows it: the
// verdict, its causes, and a table of configured against achieved figures
// with one column per direction.
type fidelityView struct {
	State fidelityState
	// Causes are the verdicts' causes, each with its direction.
	Causes []cause
	// Directions head the table's columns; Rows are its rows.
	Directions []string
	Rows       []checkRow
	// Notes explain the router data or its absence.
	Notes []string
}

// Unfaithful reports whether the run needs the warning.
func (f fidelityView) Unfaithful() bool { return f.State == stateUnfaithful }

type cause struct {
	Direction, Code, Text string
}

// checkRow is one figure of the table, one cell per direction.
type checkRow struct {
	What  string
	Cells []checkCell
}

// checkCell is one figure; Bad marks the figures that made a direction
// unfaithful.
type checkCell struct {
	Text string
	Bad  bool
}

const unknown = "—"

// buildFidelity reads the run's router data and compares it with the
// path the run recorded.
func buildFidelity(d *results.Document) fidelityView {
	rv := readRouter(d.Router)
	v := fidelityView{State: rv.State, Notes: rv.Notes}
	for _, vd := range rv.Verdicts {
		for _, c := range vd.Causes {
			v.Causes = append(v.Causes, cause{Direction: vd.Direction, Code: c.Code, Text: c.Text})
		}
	}

	// The columns: the router's directions, or the path's when the router
	// data has none.
	dirs := rv.Directions
	if len(dirs) == 0 {
		dirs = []directionFigures{{Name: "up"}, {Name: "down"}}
	}
	chainOf := map[string]string{"up": d.Run.Path.Up, "down": d.Run.Path.Down}
	var cols []column
	for _, df := range dirs {
		c := column{fig: df, chain: chainOf[df.Name]}
		if _, known := chainOf[df.Name]; !known {
			c.chain = df.Chain
		}
		c.conf, c.confOK = readConfigured(c.chain)
		cols = append(cols, c)
		v.Directions = append(v.Directions, df.Name)
	}
	for _, r := range checkRows {
		row := checkRow{What: r.what}
		known := false
		for _, c := range cols {
			cell := r.cell(c)
			if cell.Text == "" {
				cell.Text = unknown
			}
			known = known || cell.Text != unknown
			row.Cells = append(row.Cells, cell)
		}
		if known {
			v.Rows = append(v.Rows, row)
		}
	}
	return v
}

// column is what a direction's cells are made from.
type column struct {
	fig    directionFigures
	chain  string
	conf   configured
	confOK bool
}

// checkRows are the rows of the fidelity table, in order. A row whose
// cells are all unknown is left out.
var checkRows = []struct {
	what string
	cell func(c column) checkCell
}{
	{"Chain (tc syntax)", func(c column) checkCell {
		if c.chain == "" {
			return checkCell{Text: "no qdisc (a direct path)"}
		}
		return checkCell{Text: c.chain}
	}},
	{"Chain at the end of the run", func(c column) checkCell { return checkCell{Text: c.fig.ChainEnd} }},
	{"Rate configured", func(c column) checkCell {
		switch {
		case !c.confOK:
			return checkCell{}
		case c.conf.RateBps == 0:
			return checkCell{Text: "no limit"}
		}
		return checkCell{Text: mbit(float64(c.conf.RateBps))}
	}},
	{"Rate achieved during the load", func(c column) checkCell { return optional(c.fig.AchievedRateBps, mbit) }},
	{"Delay configured (netem)", func(c column) checkCell {
		if !c.confOK {
			return checkCell{}
		}
		return checkCell{Text: ms(float64(c.conf.Delay))}
	}},
	{"Delay achieved: min / median / mean", func(c column) checkCell {
		return joined(ms, c.fig.DelayMinNs, c.fig.DelayP50Ns, c.fig.DelayMeanNs)
	}},
	{"Delay achieved: 99th % / max", func(c column) checkCell { return joined(ms, c.fig.DelayP99Ns, c.fig.DelayMaxNs) }},
	{"Loss configured (netem)", func(c column) checkCell {
		switch {
		case !c.confOK:
			return checkCell{}
		case c.conf.LossModel != "":
			return checkCell{Text: "netem loss " + c.conf.LossModel + " model"}
		case c.conf.Loss == 0:
			return checkCell{Text: "none"}
		}
		return checkCell{Text: percent(c.conf.Loss)}
	}},
	{"Loss achieved (netem's loss drops / packets in)", func(c column) checkCell {
		if c.fig.LossDrops == nil || c.fig.Sent == nil {
			return checkCell{}
		}
		if *c.fig.Sent == 0 {
			return checkCell{Text: "no packets"}
		}
		return checkCell{Text: fmt.Sprintf("%s (%s of %s)", percent(*c.fig.LossDrops / *c.fig.Sent), count(*c.fig.LossDrops), count(*c.fig.Sent))}
	}},
	{"All drops by the chain", func(c column) checkCell {
		if c.fig.Dropped == nil {
			return checkCell{}
		}
		return checkCell{Text: count(*c.fig.Dropped) + results.DropReasons(c.fig.DroppedByReason)}
	}},
	{"Release lateness: median / 99th % / max", func(c column) checkCell {
		cell := joined(duration, c.fig.LatenessP50Ns, c.fig.LatenessP99Ns, c.fig.LatenessMaxNs)
		if vd := c.fig.Verdict; vd != nil && c.fig.LatenessP99Ns != nil && vd.ToleranceNs > 0 {
			cell.Bad = *c.fig.LatenessP99Ns > float64(vd.ToleranceNs)
		}
		return cell
	}},
	{"Lateness allowed (99th %)", func(c column) checkCell {
		if c.fig.Verdict == nil || c.fig.Verdict.ToleranceNs == 0 {
			return checkCell{}
		}
		return checkCell{Text: duration(float64(c.fig.Verdict.ToleranceNs))}
	}},
	{"Drops in the TUN ring before the router", func(c column) checkCell {
		cell := optional(c.fig.RingDrops, count)
		cell.Bad = c.fig.RingDrops != nil && *c.fig.RingDrops > 0
		return cell
	}},
	{"Packets the egress device refused", func(c column) checkCell { return optional(c.fig.WriteDrops, count) }},
	{"Verdict", func(c column) checkCell {
		vd := c.fig.Verdict
		switch {
		case vd == nil:
			return checkCell{}
		case vd.Faithful:
			return checkCell{Text: "faithful"}
		}
		codes := make([]string, len(vd.Causes))
		for i, cs := range vd.Causes {
			codes[i] = cs.Code
		}
		return checkCell{Text: "NOT FAITHFUL: " + strings.Join(codes, ", "), Bad: true}
	}},
}

// optional formats a figure the router data may lack.
func optional(v *float64, f func(float64) string) checkCell {
	if v == nil {
		return checkCell{}
	}
	return checkCell{Text: f(*v)}
}

// joined formats several figures of one kind as "a / b / c", unknown ones
// as dashes; all unknown is an unknown cell.
func joined(f func(float64) string, vs ...*float64) checkCell {
	parts := make([]string, len(vs))
	known := false
	for i, v := range vs {
		parts[i] = unknown
		if v != nil {
			parts[i], known = f(*v), true
		}
	}
	if !known {
		return checkCell{}
	}
	return checkCell{Text: strings.Join(parts, " / ")}
}

func mbit(bps float64) string { return strconv.FormatFloat(bps/1e6, 'f', 3, 64) + " Mbit/s" }

func ms(ns float64) string { return strconv.FormatFloat(ns/1e6, 'f', 3, 64) + " ms" }

func percent(p float64) string { return strconv.FormatFloat(p*100, 'f', 3, 64) + " %" }

func count(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
