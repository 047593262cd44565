package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"wanlab/fidelity"
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
	// Ports are the directions' host ports (buildPorts), on a run of
	// more than two hosts or with access links.
	Ports []portTable
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

// buildFidelity compares what the run's router report recorded with the
// path the run recorded.
func buildFidelity(d *results.Document) fidelityView {
	rep := d.Router
	v := fidelityView{State: stateOf(rep), Notes: routerNotes(rep), Ports: buildPorts(rep)}

	// The columns: the router's directions, or the path's when the router
	// report has none.
	var dirs []*results.DirectionReport
	names := []string{"up", "down"}
	if rep != nil && len(rep.Directions) > 0 {
		names = names[:0]
		for i := range rep.Directions {
			dirs = append(dirs, &rep.Directions[i])
			names = append(names, rep.Directions[i].Name)
		}
	}
	chainOf := map[string]string{"up": d.Run.Path.Up, "down": d.Run.Path.Down}
	var cols []column
	for i, name := range names {
		c := column{chain: chainOf[name]}
		if dirs != nil {
			c.dir = dirs[i]
			if _, known := chainOf[name]; !known {
				c.chain = c.dir.ChainStart
			}
		}
		c.verdict = verdictOf(rep, c.dir)
		c.conf, c.confOK = readConfigured(c.chain)
		if c.dir != nil {
			// What the run recorded: a trace's rate counts, which the
			// chain's text does not say.
			c.conf.RateBps, c.conf.Delay = c.dir.ConfiguredRateBps, time.Duration(c.dir.ConfiguredDelayNs)
		}
		if c.verdict != nil {
			for _, cs := range c.verdict.Causes {
				v.Causes = append(v.Causes, cause{Direction: c.verdict.Direction, Code: cs.Code, Text: cs.Text})
			}
		}
		cols = append(cols, c)
		v.Directions = append(v.Directions, name)
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
	// dir is the router report's direction, nil without one; verdict is
	// its verdict, nil without one.
	dir     *results.DirectionReport
	verdict *fidelity.Verdict
	chain   string
	// conf is what the direction was set to do: the router report's rate
	// and delay, the chain's loss; without a router report all from the
	// chain, if it parses (confOK).
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
	{"Chain at the end of the run", func(c column) checkCell {
		if c.dir == nil || c.dir.ChainEnd == c.dir.ChainStart {
			return checkCell{}
		}
		return checkCell{Text: c.dir.ChainEnd}
	}},
	{"Rate configured", func(c column) checkCell {
		switch {
		case !c.confOK && c.dir == nil:
			return checkCell{}
		case c.conf.RateBps == 0:
			return checkCell{Text: "no limit"}
		}
		return checkCell{Text: mbit(float64(c.conf.RateBps))}
	}},
	{"Rate achieved during the load", func(c column) checkCell {
		if c.dir == nil {
			return checkCell{}
		}
		return checkCell{Text: mbit(c.dir.LoadRateBps)}
	}},
	{"Delay configured (netem)", func(c column) checkCell {
		if !c.confOK && c.dir == nil {
			return checkCell{}
		}
		return checkCell{Text: ms(float64(c.conf.Delay))}
	}},
	{"Delay achieved: min / median / mean", func(c column) checkCell {
		if !delivered(c) {
			return checkCell{}
		}
		dl := c.dir.Delay
		return joined(ms, dl.MinNs, dl.P50Ns, dl.MeanNs)
	}},
	{"Delay achieved: 99th % / max", func(c column) checkCell {
		if !delivered(c) {
			return checkCell{}
		}
		return joined(ms, c.dir.Delay.P99Ns, c.dir.Delay.MaxNs)
	}},
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
		switch {
		case c.dir == nil:
			return checkCell{}
		case c.dir.Sent == 0:
			return checkCell{Text: "no packets"}
		}
		// Reasons with no drops are left out: loss dropped nothing.
		loss, sent := float64(c.dir.DroppedByReason["loss"]), float64(c.dir.Sent)
		return checkCell{Text: fmt.Sprintf("%s (%s of %s)", percent(loss/sent), count(loss), count(sent))}
	}},
	{"All drops by the chain", func(c column) checkCell {
		if c.dir == nil {
			return checkCell{}
		}
		return checkCell{Text: count(float64(c.dir.Dropped)) + results.DropReasons(c.dir.DroppedByReason)}
	}},
	{"Release lateness: median / 99th % / max", func(c column) checkCell {
		if c.dir == nil {
			return checkCell{}
		}
		l := c.dir.Lateness
		cell := joined(duration, float64(l.P50Ns), float64(l.P99Ns), float64(l.MaxNs))
		if vd := c.verdict; vd != nil && vd.ToleranceNs > 0 {
			cell.Bad = l.P99Ns > vd.ToleranceNs
		}
		return cell
	}},
	{"Lateness allowed (99th %)", func(c column) checkCell {
		if c.verdict == nil || c.verdict.ToleranceNs == 0 {
			return checkCell{}
		}
		return checkCell{Text: duration(float64(c.verdict.ToleranceNs))}
	}},
	{"Drops in the TUN ring before the router", func(c column) checkCell {
		if c.dir == nil {
			return checkCell{}
		}
		return checkCell{Text: count(float64(c.dir.RingDrops)), Bad: c.dir.RingDrops > 0}
	}},
	{"Packets the egress device refused", func(c column) checkCell {
		if c.dir == nil {
			return checkCell{}
		}
		return checkCell{Text: count(float64(c.dir.WriteDrops))}
	}},
	{"Verdict", func(c column) checkCell {
		vd := c.verdict
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

// delivered reports whether the direction delivered packets, whose delays
// the report has (without any, its delay figures are zeros, not delays).
func delivered(c column) bool { return c.dir != nil && c.dir.Delay.N > 0 }

// joined formats several figures of one kind as "a / b / c".
func joined(f func(float64) string, vs ...float64) checkCell {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = f(v)
	}
	return checkCell{Text: strings.Join(parts, " / ")}
}

func mbit(bps float64) string { return strconv.FormatFloat(bps/1e6, 'f', 3, 64) + " Mbit/s" }

func ms(ns float64) string { return strconv.FormatFloat(ns/1e6, 'f', 3, 64) + " ms" }

func percent(p float64) string { return strconv.FormatFloat(p*100, 'f', 3, 64) + " %" }

func count(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
