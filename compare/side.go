package compare

import (
	"slices"
	"strings"

	"wanlab/experiment"
	"wanlab/results"
)

// Run is one run of a side: its results document, where it came from,
// and the variables of its experiment's case (none for a run given as a
// results file).
type Run struct {
	// Source names the run for people: its results file.
	Source string
	// Vars are the variables of the run's case, by name.
	Vars map[string]string
	// Doc is the run's results document; its summaries are all a
	// comparison reads, so a document without samples will do.
	Doc *results.Document
}

// Side is one side of a comparison, A or B: runs of the same thing
// repeated, or an experiment's runs, whose cases are compared one by one.
type Side struct {
	// Label names the side as the user gave it (a path, or several).
	Label string
	// Variables are the experiment's variables, in its file's order;
	// none for runs given as results files.
	Variables []string
	// Runs are the side's runs.
	Runs []Run
	// Skipped counts an experiment's runs left out because they are not
	// complete.
	Skipped int
}

// FromExperiment makes a side of an experiment's complete runs, each with
// its case's variables; the runs that are not complete (partial, failed,
// not made) are counted in Skipped, as a table leaves them out.
func FromExperiment(label string, rs *experiment.Runs) *Side {
	s := &Side{Label: label, Variables: slices.Clone(rs.Index.Variables)}
	for _, c := range rs.Index.Cases {
		for _, r := range c.Runs {
			rr := rs.Run(r.File)
			if rr == nil || rr.Status != experiment.StatusComplete || rr.Doc == nil {
				s.Skipped++
				continue
			}
			s.Runs = append(s.Runs, Run{Source: rs.Where(r.File), Vars: c.Vars, Doc: rr.Doc})
		}
	}
	return s
}

// value returns the run's value of dimension name: a variable of its case
// or "test", the run's test.
func (r *Run) value(name string) string {
	if name == "test" {
		return r.Doc.Run.Test
	}
	return r.Vars[name]
}

// has reports whether the side's runs have dimension name: "test", or one
// of its variables.
func (s *Side) has(name string) bool {
	return name == "test" || slices.Contains(s.Variables, name)
}

// values lists the values of dimension name among the side's runs, in
// order of first appearance.
func (s *Side) values(name string) []string {
	var out []string
	for i := range s.Runs {
		if v := s.Runs[i].value(name); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Case is what a set of runs compared as one has in common: its
// variables' values (in the side's order; none for runs given as files)
// and its test.
type Case struct {
	Vars []experiment.Var
	Test string
}

// String names the case: "delay=10ms cc=cubic, tcp_upload", or the test
// alone.
func (c Case) String() string {
	parts := make([]string, 0, len(c.Vars))
	for _, v := range c.Vars {
		parts = append(parts, v.Name+"="+v.Value)
	}
	if len(parts) == 0 {
		return c.Test
	}
	return strings.Join(parts, " ") + ", " + c.Test
}

// equal reports whether two cases are the same.
func (c Case) equal(o Case) bool {
	return c.Test == o.Test && slices.Equal(c.Vars, o.Vars)
}

// value returns the case's value of a variable, or "test".
func (c Case) value(name string) (string, bool) {
	if name == "test" {
		return c.Test, true
	}
	for _, v := range c.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// group is the runs of one side that share a case.
type group struct {
	key  Case
	docs []*results.Document
}

// groups returns the side's runs that where keeps, grouped by case in
// order of first appearance. A variable of where that the side does not
// have does not restrict it.
func (s *Side) groups(where map[string][]string) []*group {
	var out []*group
	for i := range s.Runs {
		r := &s.Runs[i]
		keep := true
		for name, vs := range where {
			if s.has(name) && !slices.Contains(vs, r.value(name)) {
				keep = false
			}
		}
		if !keep {
			continue
		}
		key := Case{Test: r.Doc.Run.Test}
		for _, name := range s.Variables {
			key.Vars = append(key.Vars, experiment.Var{Name: name, Value: r.Vars[name]})
		}
		i := slices.IndexFunc(out, func(g *group) bool { return g.key.equal(key) })
		if i < 0 {
			out = append(out, &group{key: key})
			i = len(out) - 1
		}
		out[i].docs = append(out[i].docs, r.Doc)
	}
	return out
}
