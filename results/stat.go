package results

// Stats names the figures of a Summary that a view chooses by name (a
// comparison's statistics, a condition on one), in the order views list
// them.
var Stats = []string{"mean", "median", "min", "max", "p90", "p99", "stddev", "variance", "total"}

// Stat returns the figure of s that name (one of Stats) names, and false
// for a name that is none of them.
func (s Summary) Stat(name string) (float64, bool) {
	switch name {
	case "mean":
		return s.Mean, true
	case "median":
		return s.Median, true
	case "min":
		return s.Min, true
	case "max":
		return s.Max, true
	case "p90":
		return s.P90, true
	case "p99":
		return s.P99, true
	case "stddev":
		return s.StdDev, true
	case "variance":
		return s.Variance, true
	case "total":
		return s.Total, true
	}
	return 0, false
}

// StatUnit is the unit of the figure name of the series' summary: the
// series' unit, its TotalUnit for "total" and its square for "variance".
func (s *Series) StatUnit(name string) string {
	switch {
	case name == "total":
		return s.TotalUnit()
	case name == "variance" && s.Unit != "":
		return s.Unit + "²"
	}
	return s.Unit
}
