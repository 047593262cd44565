package experiment

import "strings"

// Selected is one run of an experiment that Select chose.
type Selected struct {
	// Case and Run are its entries in the index.
	Case *IndexCase
	Run  *IndexRun
	// Dims are its case's variables and its test (under "test").
	Dims map[string]string
	// Result is its results, as Runs holds them.
	Result *RunResult
}

// Select returns the runs whose variables (and test, "test") have one of
// the values where gives, in the index's order: the runs a view of some of
// an experiment's cases draws (wanlab plot DIR --where VAR=VALUE). A value
// is a value of the variable, or several joined by commas where the joined
// string is not one, as for tables. varying lists the dimensions whose
// value differs among the runs chosen, in the file's order, the test last
// and only when a case runs several tests (otherwise the case's variables
// decide it): what tells the runs' cases apart. A variable or value the
// experiment does not have is a ChoiceError that lists those it has.
func (rs *Runs) Select(where map[string][]string) (runs []Selected, varying []string, err error) {
	ix := rs.Index
	dims := append(append([]string{}, ix.Variables...), "test")
	values := map[string][]string{}
	severalTests := false
	for _, c := range ix.Cases {
		for _, name := range ix.Variables {
			if !contains(values[name], c.Vars[name]) {
				values[name] = append(values[name], c.Vars[name])
			}
		}
		for _, r := range c.Runs {
			if !contains(values["test"], r.Test) {
				values["test"] = append(values["test"], r.Test)
			}
			severalTests = severalTests || r.Test != c.Runs[0].Test
		}
	}
	keep, err := resolveWhere(rs.Path, dims, values, where)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string][]string{}
	for ci := range ix.Cases {
		c := &ix.Cases[ci]
		for ri := range c.Runs {
			r := &c.Runs[ri]
			d := map[string]string{"test": r.Test}
			for k, v := range c.Vars {
				d[k] = v
			}
			if !matchesWhere(d, keep) {
				continue
			}
			runs = append(runs, Selected{Case: c, Run: r, Dims: d, Result: rs.Run(r.File)})
			for _, name := range dims {
				if !contains(seen[name], d[name]) {
					seen[name] = append(seen[name], d[name])
				}
			}
		}
	}
	for _, name := range dims {
		if len(seen[name]) > 1 && (name != "test" || severalTests) {
			varying = append(varying, name)
		}
	}
	return runs, varying, nil
}

// Label names a selected run's case by the dimensions given (those that
// vary among the runs shown): "delay=10ms transport=reno", or "" for none.
func (s Selected) Label(dims []string) string {
	parts := make([]string, 0, len(dims))
	for _, d := range dims {
		parts = append(parts, d+"="+s.Dims[d])
	}
	return strings.Join(parts, " ")
}

// Values gives a selected run's values of the dimensions given, in order.
func (s Selected) Values(dims []string) []string {
	out := make([]string, len(dims))
	for i, d := range dims {
		out[i] = s.Dims[d]
	}
	return out
}

// resolveWhere checks --where against an experiment's dimensions (its
// variables and "test") and their values, and returns the values kept of
// each dimension named: a value of it, or several joined by commas where
// the joined string is not one. path names the experiment in messages.
func resolveWhere(path string, dims []string, values, where map[string][]string) (map[string][]string, error) {
	keep := map[string][]string{}
	for name, given := range where {
		if !contains(dims, name) && len(given) > 0 {
			return nil, choicef("--where %s=%s: %s is not a variable of %s (its variables are %s)", name, given[0], name, path, strings.Join(dims, ", "))
		}
		for _, raw := range given {
			vs := []string{raw}
			if !contains(values[name], raw) {
				vs = strings.Split(raw, ",")
			}
			for _, v := range vs {
				if !contains(values[name], v) {
					return nil, choicef("--where %s=%s: %s has no value %q (its values are %s)", name, raw, name, v, strings.Join(values[name], ", "))
				}
				if !contains(keep[name], v) {
					keep[name] = append(keep[name], v)
				}
			}
		}
	}
	return keep, nil
}
