package compare

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"wanlab/results"
)

// Condition is a bound on a difference B − A, which a CI pipeline fails
// on: "TCP upload sum mean < -5%" holds when B's mean of TCP upload sum
// is below A's by more than 5 % of A's, "TCP totals mean < -2" when by
// more than 2 (in the series' unit).
//
// A condition holds on a pair of cases when the whole confidence interval
// of the difference is past the bound (Hi < bound for <, Lo > bound for
// >; <= and >= take the bound itself too): a difference the runs show
// beyond their noise, not one their noise could make. Without an interval
// (a side of one run) the difference itself is judged. It holds on the
// comparison when it holds on any pair.
type Condition struct {
	// Text is the condition as written.
	Text string
	// Series and Stat name the figure: a series (a flow's own too) and
	// one of results.Stats.
	Series, Stat string
	// Op is "<", "<=", ">" or ">=".
	Op string
	// Bound is the bound on B − A: in the statistic's unit, or with
	// Percent in percent of A's figure.
	Bound   float64
	Percent bool
}

// conditionSyntax is what a condition looks like, for error messages.
const conditionSyntax = `write SERIES STAT OP BOUND, e.g. "TCP upload sum mean < -5%" (B's mean more than 5 % below A's) or "Ping (ms) ICMP median > +10" (more than 10 ms above)`

// boundSyntax is a signed number with an optional %: the sign is required
// (the bound is on the difference B − A, whose sign is the point), but for
// zero.
var boundSyntax = regexp.MustCompile(`^(?:[+-](?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)|0(?:\.0*)?)%?$`)

// ParseCondition parses a condition: the series' name, a statistic (one
// of results.Stats), a comparison (<, <=, >, >=) and a bound, a number
// with its sign and an optional % (of A's figure), as in "TCP upload sum
// mean < -5%". Its errors say what to write.
func ParseCondition(text string) (Condition, error) {
	c := Condition{Text: text}
	fail := func(format string, args ...any) (Condition, error) {
		return Condition{}, fmt.Errorf("--fail-if %q: %s", text, fmt.Sprintf(format, args...))
	}
	at := strings.IndexAny(text, "<>")
	if at < 0 {
		return fail("no comparison: %s", conditionSyntax)
	}
	c.Op = text[at : at+1]
	rest := text[at+1:]
	if strings.HasPrefix(rest, "=") {
		c.Op += "="
		rest = rest[1:]
	}
	if strings.ContainsAny(rest, "<>=") || strings.Contains(text[:at], "=") {
		return fail("one comparison, <, <=, > or >=, between the statistic and the bound: %s", conditionSyntax)
	}
	left := strings.TrimSpace(text[:at])
	bound := strings.TrimSpace(rest)
	switch {
	case bound == "":
		return fail("no bound after %s: %s", c.Op, conditionSyntax)
	case strings.ContainsAny(bound, " \t"):
		return fail("the bound %q is one number: %s", bound, conditionSyntax)
	case !boundSyntax.MatchString(bound):
		if boundSyntax.MatchString("+" + bound) {
			return fail("give the bound its sign, %s or %s: it bounds the difference B − A, negative for a drop, positive for a rise", "-"+bound, "+"+bound)
		}
		return fail("the bound %q: write a number with its sign and, for a share of A's figure, %%: -5%%, +10%%, -2.5 (in the series' unit)", bound)
	}
	if c.Percent = strings.HasSuffix(bound, "%"); c.Percent {
		bound = strings.TrimSuffix(bound, "%")
	}
	var err error
	if c.Bound, err = strconv.ParseFloat(bound, 64); err != nil {
		return fail("the bound %q: %v", bound, err)
	}
	fields := strings.Fields(left)
	if len(fields) == 0 {
		return fail("no series and statistic before %s: %s", c.Op, conditionSyntax)
	}
	c.Stat = fields[len(fields)-1]
	if !slices.Contains(results.Stats, c.Stat) {
		return fail("%q is not a statistic: after the series' name write one of %s (%s)", c.Stat, strings.Join(results.Stats, ", "), conditionSyntax)
	}
	c.Series = strings.TrimSpace(strings.TrimSuffix(left, c.Stat))
	if c.Series == "" {
		return fail("no series before %q: %s", c.Stat, conditionSyntax)
	}
	return c, nil
}

// String writes the condition back in the form ParseCondition reads.
func (c Condition) String() string {
	bound := c.Bound
	if bound == 0 {
		bound = 0 // -0 (a bound written "-0") prints as +0, which reads back
	}
	b := strconv.FormatFloat(bound, 'f', -1, 64)
	if bound >= 0 && !strings.HasPrefix(b, "+") {
		b = "+" + b
	}
	if c.Percent {
		b += "%"
	}
	return fmt.Sprintf("%s %s %s %s", c.Series, c.Stat, c.Op, b)
}

// Verdict is a condition judged on one pair of cases.
type Verdict struct {
	// Condition is the condition, Pair the index of the pair in
	// Result.Pairs and Row its row there.
	Condition Condition
	Pair      int
	Row       Row
	// Bound is the bound in the statistic's unit (a percentage of A's
	// figure made absolute).
	Bound float64
	// Interval says the interval was judged; without it, the difference
	// itself (a side of one run).
	Interval bool
	// Held says the condition holds on this pair.
	Held bool
}

// judge judges every condition on every pair that has its row. A
// condition that no pair can judge (its percentage of a figure of 0, a
// side without a figure) is an error.
func (r *Result) judge(conds []Condition) error {
	for _, c := range conds {
		judged := 0
		var why string
		for i, p := range r.Pairs {
			j := slices.IndexFunc(p.Rows, func(row Row) bool { return row.Series == c.Series && row.Stat == c.Stat })
			if j < 0 {
				continue
			}
			row := p.Rows[j]
			bound := c.Bound
			if c.Percent {
				if math.IsNaN(row.Pct(1)) {
					why = fmt.Sprintf("A's %s of %s is %s, of which a percentage says nothing: give the bound in the series' unit", c.Stat, c.Series, formatNum(row.A, decimals(row.A)))
					continue
				}
				bound = c.Bound / 100 * math.Abs(row.A)
			}
			if row.NA == 0 || row.NB == 0 {
				why = fmt.Sprintf("a side has no figure of %s's %s", c.Series, c.Stat)
				continue
			}
			v := Verdict{Condition: c, Pair: i, Row: row, Bound: bound, Interval: row.HasInterval()}
			lo, hi := row.Diff, row.Diff
			if v.Interval {
				lo, hi = row.Lo, row.Hi
			}
			switch c.Op {
			case "<":
				v.Held = hi < bound
			case "<=":
				v.Held = hi <= bound
			case ">":
				v.Held = lo > bound
			case ">=":
				v.Held = lo >= bound
			}
			r.Verdicts = append(r.Verdicts, v)
			judged++
		}
		if judged == 0 {
			return fmt.Errorf("--fail-if %q cannot be judged: %s", c.Text, why)
		}
	}
	return nil
}
