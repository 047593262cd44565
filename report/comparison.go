package report

import "wanlab/compare"

// comparisonView is the section "Comparison with B": the comparison's
// caption, a table per pair of cases, its notes and its conditions'
// verdicts, each as package compare words them, so that the page says
// what `wanlab compare` prints.
type comparisonView struct {
	// With names side B as the user gave it.
	With    string
	Caption []string
	Header  []string
	Pairs   []comparisonPair
	Notes   []string
	// Verdicts are the conditions' verdicts, one line each; none when the
	// comparison judged no condition.
	Verdicts []comparisonVerdict
}

// comparisonPair is a pair of cases compared: its heading and its rows.
type comparisonPair struct {
	Heading string
	Rows    []comparisonRow
}

// comparisonRow is one row of a pair's table: its cells under Header,
// and whether its difference is significant, which the page marks by a
// class and says in the row's last cell.
type comparisonRow struct {
	Cells       []string
	Significant bool
}

type comparisonVerdict struct {
	Held      bool
	Condition string
	Why       string
}

// buildComparison lays out a comparison for the page; nil for none.
func buildComparison(r *compare.Result) *comparisonView {
	if r == nil {
		return nil
	}
	v := &comparisonView{With: r.B.Label, Caption: r.Caption(), Header: r.Header(), Notes: r.Notes()}
	for i := range r.Pairs {
		p := &r.Pairs[i]
		pv := comparisonPair{Heading: p.Heading()}
		for j := range p.Rows {
			pv.Rows = append(pv.Rows, comparisonRow{Cells: r.Cells(&p.Rows[j]), Significant: p.Rows[j].Significant})
		}
		v.Pairs = append(v.Pairs, pv)
	}
	for _, vd := range r.Verdicts {
		v.Verdicts = append(v.Verdicts, comparisonVerdict{Held: vd.Held, Condition: vd.Condition.Text, Why: r.Explain(vd)})
	}
	return v
}
