package results

import "testing"

// Every name of Stats gives its own figure of a summary; another name
// gives none.
func TestStat(t *testing.T) {
	s := Summary{N: 9, Total: 1, Mean: 2, Median: 3, Min: 4, Max: 5, P90: 6, P99: 7, StdDev: 8, Variance: 9}
	seen := map[float64]string{}
	for _, name := range Stats {
		v, ok := s.Stat(name)
		if !ok || seen[v] != "" {
			t.Errorf("Stat(%q) = %g, %v (also %q's)", name, v, ok, seen[v])
		}
		seen[v] = name
	}
	if len(seen) != 9 {
		t.Errorf("Stats names %d figures, the summary has 9", len(seen))
	}
	if _, ok := s.Stat("avg"); ok {
		t.Error(`Stat("avg") found a figure`)
	}
	rate, delay := &Series{Unit: "Mbits/s"}, &Series{Unit: "ms"}
	for _, c := range []struct {
		s          *Series
		stat, want string
	}{{rate, "mean", "Mbits/s"}, {rate, "total", "Mbits"}, {rate, "variance", "Mbits/s²"}, {delay, "total", ""}, {delay, "p99", "ms"}} {
		if got := c.s.StatUnit(c.stat); got != c.want {
			t.Errorf("%s of %s: unit %q, want %q", c.stat, c.s.Unit, got, c.want)
		}
	}
}
