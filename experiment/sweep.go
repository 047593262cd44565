package experiment

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
)

// SweepSpec is the flag form of a small experiment: `wanlab run TEST
// --sweep VAR=V1,V2,... [--sweep ...] --up 'netem delay ${VAR}' ...`.
type SweepSpec struct {
	// Name names the experiment ("tcp_upload-sweep").
	Name string
	// Test is the test to run, Sweeps the --sweep values as given.
	Test   string
	Sweeps []string
	// Up, Down and Both are the path flags, which may use ${VAR}.
	Up, Down, Both string
	// Options are the other run options, by experiment key, in the order
	// given; their values may use ${VAR}.
	Options []Option
	// Repeat is the repetitions of each case (0 or 1: once).
	Repeat int
	// Seed is the experiment's seed (0: the default, 1).
	Seed uint64
}

// SweepFile writes the experiment file a sweep stands for, so that the
// sweep runs, resumes and lays out exactly as that file would (and its
// results directory carries the file). The variables are crossed in the
// order of the --sweep flags.
func SweepFile(s SweepSpec) ([]byte, error) {
	if len(s.Sweeps) == 0 {
		return nil, fmt.Errorf("no --sweep given: write --sweep VAR=V1,V2,... and use ${VAR} in the path or the options")
	}
	vars := yaml.MapSlice{}
	seen := map[string]bool{}
	for _, sw := range s.Sweeps {
		name, list, ok := strings.Cut(sw, "=")
		name = strings.TrimSpace(name)
		if !ok || !varName.MatchString(name) {
			return nil, fmt.Errorf("--sweep %q: write VAR=V1,V2,... with VAR made of letters, digits and _ (e.g. --sweep delay=10ms,30ms)", sw)
		}
		if _, reserved := reservedVars[name]; reserved {
			return nil, fmt.Errorf("--sweep %s: %s is reserved for %s: choose another name", name, name, reservedVars[name])
		}
		if seen[name] {
			return nil, fmt.Errorf("--sweep %s is given twice: give all its values in one --sweep %s=V1,V2,...", name, name)
		}
		seen[name] = true
		var values []string
		for _, v := range strings.Split(list, ",") {
			v = strings.TrimSpace(v)
			if v == "" {
				return nil, fmt.Errorf("--sweep %q has an empty value: separate values with single commas (e.g. --sweep %s=10ms,30ms)", sw, name)
			}
			if contains(values, v) {
				return nil, fmt.Errorf("--sweep %q lists %q twice", sw, v)
			}
			values = append(values, v)
		}
		vars = append(vars, yaml.MapItem{Key: name, Value: values})
	}
	path := yaml.MapSlice{}
	for _, p := range []struct{ key, text string }{{"up", s.Up}, {"down", s.Down}, {"both", s.Both}} {
		if p.text != "" {
			path = append(path, yaml.MapItem{Key: p.key, Value: p.text})
		}
	}
	test := yaml.MapSlice{{Key: "test", Value: s.Test}}
	for _, o := range s.Options {
		if len(o.Values) == 1 {
			test = append(test, yaml.MapItem{Key: o.Key, Value: o.Values[0]})
		} else {
			test = append(test, yaml.MapItem{Key: o.Key, Value: o.Values})
		}
	}
	doc := yaml.MapSlice{{Key: "name", Value: s.Name}}
	if s.Seed != 0 {
		doc = append(doc, yaml.MapItem{Key: "seed", Value: s.Seed})
	}
	doc = append(doc, yaml.MapItem{Key: "vars", Value: vars})
	if len(path) > 0 {
		doc = append(doc, yaml.MapItem{Key: "path", Value: path})
	}
	doc = append(doc, yaml.MapItem{Key: "tests", Value: []any{test}})
	if s.Repeat > 1 {
		doc = append(doc, yaml.MapItem{Key: "repeat", Value: s.Repeat})
	}
	return yaml.MarshalWithOptions(doc, yaml.Flow(false), yaml.IndentSequence(true))
}
