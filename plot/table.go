package plot

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"wanlab/experiment"
)

// TableGraph says how FromTable draws an experiment's table.
type TableGraph struct {
	// LogX asks for a logarithmic x axis; the row variable must be
	// numeric, its values above zero.
	LogX bool
}

// spreads are the spreads across repetitions a table's error bars show,
// by the name of experiment.Table.Spread: what the subtitle says of them,
// the centers they go with (a confidence interval is the mean's), and the
// bar of a cell. "none" draws no bar.
var spreads = map[string]struct {
	about   string
	centers []string
	bar     func(c experiment.Cell, center float64) (lo, hi float64)
}{
	"stddev": {"± sample std dev across repetitions", []string{"mean", "median"}, func(c experiment.Cell, center float64) (float64, float64) {
		return center - c.Summary.SampleStdDev, center + c.Summary.SampleStdDev
	}},
	"minmax": {"min–max across repetitions", []string{"mean", "median"}, func(c experiment.Cell, _ float64) (float64, float64) {
		return c.Summary.Min, c.Summary.Max
	}},
	"ci95": {fmt.Sprintf("%g %% confidence interval of the mean (Student's t)", experiment.Confidence*100), []string{"mean"}, func(c experiment.Cell, _ float64) (float64, float64) {
		return c.Interval.Lo(), c.Interval.Hi()
	}},
	"none": {},
}

// FromTable draws an experiment's table as a sweep graph: the row
// variable along the x axis (numeric, in its unit, when its values are
// quantities of one kind; categorical otherwise), a group per column, each
// cell's figure (the table's Center: the mean or the median of its runs)
// with an error bar for the table's Spread (none for a cell of one run, and
// none for a spread that is not of that figure: a confidence interval of
// the mean around a median), the cells' reference figures as a group of
// their own per column and source, and the title naming the table's
// experiment, its statistic and every variable held fixed (Fixed and
// Given).
func FromTable(t *experiment.Table, g TableGraph) (Sweep, error) {
	sp, ok := spreads[t.Spread]
	if !ok {
		return Sweep{}, fmt.Errorf("plot: a table's spread %q has no error bar here: use one of stddev, minmax, ci95 or none", t.Spread)
	}
	center := t.Center
	if center == "" {
		center = "mean"
	}
	if !slices.Contains(sp.centers, center) {
		sp.about, sp.bar = "", nil
	}
	s := Sweep{
		XLabel: t.RowVar,
		YLabel: center + " of " + t.Stat + " of " + strings.Join(t.Series, " / "),
		YUnit:  t.Unit,
		Spread: sp.about,
		Note:   leftOutNote(t),
		Title:  tableTitle(t),
	}
	if center == "mean" {
		// The mean of each run's mean is the mean: "mean of TCP upload".
		s.YLabel = t.Stat + " of " + strings.Join(t.Series, " / ")
	}
	xs, unit, numeric := numericValues(t.Rows)
	switch {
	case numeric:
		s.XUnit = unit
	case g.LogX:
		return Sweep{}, fmt.Errorf("plot: --log-x needs a numeric variable along x, and %s's values (%s) are not all times, rates, sizes or plain numbers: leave --log-x out", t.RowVar, strings.Join(t.Rows, ", "))
	default:
		s.Categories = t.Rows
	}
	if g.LogX {
		for i, x := range xs {
			if x <= 0 {
				return Sweep{}, fmt.Errorf("plot: --log-x: %s=%s is not above zero, which a logarithmic axis cannot show: leave --log-x out, or the case out with --where", t.RowVar, t.Rows[i])
			}
		}
		s.XLog = true
	}
	at := func(i int) SweepPoint {
		p := SweepPoint{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
		if numeric {
			p.X = xs[i]
		} else {
			p.Category = t.Rows[i]
		}
		return p
	}
	var refs []SweepGroup
	refIndex := map[string]int{}
	for j := range t.Cols {
		grp := SweepGroup{Name: t.Cols[j]}
		if t.ColVar == "" {
			grp.Name = center
		}
		for i := range t.Rows {
			c := t.Cells[i][j]
			p := at(i)
			if c.N > 0 {
				m := c.Summary.Mean
				if center == "median" {
					m = c.Summary.Median
				}
				p.Mean, p.Lo, p.Hi = m, m, m
				if c.N > 1 && sp.bar != nil {
					p.Lo, p.Hi = sp.bar(c, m)
				}
			}
			grp.Points = append(grp.Points, p)
			if r := c.Reference; r != nil {
				key := grp.Name + "\x00" + r.Source
				k, seen := refIndex[key]
				if !seen {
					k = len(refs)
					refIndex[key] = k
					name := r.Source
					if t.ColVar != "" {
						name = grp.Name + ": " + r.Source
					}
					refs = append(refs, SweepGroup{Name: name, Reference: true, Beside: grp.Name})
				}
				rp := at(i)
				rp.Mean = r.Value
				refs[k].Points = append(refs[k].Points, rp)
			}
		}
		s.Groups = append(s.Groups, grp)
	}
	s.Groups = append(s.Groups, refs...)
	return s, nil
}

// tableTitle names the experiment, what the table shows, by what, and
// what it is for: every variable held fixed, by the table's split (Fixed)
// or by --where (Given), and its series when the tables are split by it.
func tableTitle(t *experiment.Table) string {
	by := t.RowVar
	if t.ColVar != "" {
		by += " and " + t.ColVar
	}
	title := fmt.Sprintf("%s: %s of %s by %s", t.Name, t.Stat, strings.Join(t.Series, " / "), by)
	var fixed []string
	for _, v := range append(append([]experiment.Var(nil), t.Given...), t.Fixed...) {
		fixed = append(fixed, v.Name+"="+v.Value)
	}
	if len(fixed) > 0 {
		title += " (" + strings.Join(fixed, ", ") + ")"
	}
	return title
}

// leftOutNote says which runs the table left out, as its text does, and
// its notes.
func leftOutNote(t *experiment.Table) string {
	var left []string
	if t.Skipped > 0 {
		left = append(left, plural(t.Skipped, "run")+" not complete")
	}
	if t.Lacking > 0 && len(t.Series) > 0 {
		left = append(left, plural(t.Lacking, "run")+" without "+t.Series[0])
	}
	out := slices.Clone(t.Notes)
	if len(left) > 0 {
		out = append(out, strings.Join(left, ", ")+", left out")
	}
	return strings.Join(out, "  ·  ")
}
