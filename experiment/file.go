package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// file is an experiment file as written: its keys checked, its templates
// not yet substituted.
type file struct {
	name    string // as the user gave it, for messages
	content []byte

	title       string // the `name` key
	description string
	seed        uint64
	vars        grid       // the `vars` key, crossed
	cases       []caseSpec // the `cases` key, each crossed with vars
	exclude     []filter
	quick       filter // labels kept by --quick, per variable
	quickLine   int
	up, down    template
	tests       []testSpec
	repeat      int
	shuffle     bool
	pause       time.Duration
}

// template is text that may hold ${var} placeholders, with its line.
type template struct {
	text string
	line int
}

// variable is one swept variable and its values.
type variable struct {
	name   string
	line   int
	values []value
}

// grid is variables crossed into every combination of their values.
type grid []*variable

// caseSpec is one entry of `cases`: a grid of its own.
type caseSpec struct {
	line int
	vars grid
}

// value is one value of a variable: its label (what tables and the index
// show) and the further variables it binds.
type value struct {
	label string
	line  int
	binds []binding
}

// binding sets a further variable when a value is chosen.
type binding struct {
	name string
	text template
}

// filter selects cases by variables: a case matches when, for every
// variable named, its value is one of the labels listed.
type filter struct {
	line   int
	labels map[string][]string
	lines  map[string]int
}

// testSpec is one entry of `tests`.
type testSpec struct {
	line    int
	test    template
	options []optionSpec
}

// optionSpec is one option of a test entry: a scalar (one value) or a
// sequence (a repeatable option).
type optionSpec struct {
	key    string
	line   int
	values []template
}

// Keys of an experiment file, in the order the documentation gives them.
var topKeys = []string{"name", "description", "seed", "vars", "cases", "exclude", "quick", "path", "tests", "repeat", "shuffle", "pause"}

var pathKeys = []string{"up", "down", "both"}

// reservedKeys are run options that an experiment sets itself, with the
// way to set them.
var reservedKeys = map[string]string{
	"seed":   "each run's seed is derived from the experiment's top-level seed, the case and the repetition: set `seed:` at the top of the file",
	"up":     "the path belongs to the top-level `path:` key (up, down or both), which may use ${var}",
	"down":   "the path belongs to the top-level `path:` key (up, down or both), which may use ${var}",
	"both":   "the path belongs to the top-level `path:` key (up, down or both), which may use ${var}",
	"output": "each run's results file is named by the experiment inside its results directory (-o DIR)",
	"json":   "an experiment writes every run's results document into its results directory",
}

// Bounds of numeric keys.
const (
	maxRepeat = 1000
	maxPause  = time.Hour
)

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseFile reads an experiment file strictly. optionKeys are the run
// options a test entry may set.
func parseFile(name string, content []byte, optionKeys []string) (*file, error) {
	p := newProblems(name)
	f := &file{name: name, content: content, seed: 1, repeat: 1}
	root, err := parseYAML(content)
	if err != nil {
		return nil, Errors{yamlError(name, err)}
	}
	if root == nil {
		p.addf(0, "the file is empty: an experiment needs at least `tests:`; see docs/experiments.md")
		return nil, p.err()
	}
	if root.kind != mappingNode {
		p.addf(root.line, "an experiment file is a mapping of keys (name, vars, path, tests, ...), not a %s", kindName(root))
		return nil, p.err()
	}
	seen := map[string]bool{}
	var pathNode, testsNode *node
	eachPair(p, root, func(k, v *node) {
		key := k.value
		seen[key] = true
		switch key {
		case "name":
			f.title = scalarText(p, key, v)
		case "description":
			f.description = scalarText(p, key, v)
		case "seed":
			if s, ok := scalarText2(p, key, v); ok {
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil || n > maxSeed {
					p.addf(v.line, "seed %q must be a whole number from 0 to %d, e.g. seed: 1", s, uint64(maxSeed))
				}
				f.seed = n
			}
		case "vars":
			f.vars = parseGrid(p, "vars", v)
		case "cases":
			f.cases = parseCases(p, v)
		case "exclude":
			f.exclude = parseFilters(p, "exclude", v)
		case "quick":
			if fl := parseFilter(p, "quick", v); fl != nil {
				f.quick, f.quickLine = *fl, v.line
			}
		case "path":
			pathNode = v
		case "tests":
			testsNode = v
		case "repeat":
			if s, ok := scalarText2(p, key, v); ok {
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 || n > maxRepeat {
					p.addf(v.line, "repeat %q must be a whole number from 1 to %d, e.g. repeat: 3", s, maxRepeat)
				} else {
					f.repeat = n
				}
			}
		case "shuffle":
			if s, ok := scalarText2(p, key, v); ok {
				switch s {
				case "true":
					f.shuffle = true
				case "false":
				default:
					p.addf(v.line, "shuffle %q must be true or false", s)
				}
			}
		case "pause":
			if s, ok := scalarText2(p, key, v); ok {
				d, err := time.ParseDuration(s)
				if err != nil || d < 0 || d > maxPause {
					p.addf(v.line, "pause %q must be a duration from 0s to %v, e.g. pause: 2s", s, maxPause)
				} else {
					f.pause = d
				}
			}
		default:
			p.addf(k.line, "%s", unknownKey(key, "an experiment file", topKeys, optionKeys))
		}
	})
	if pathNode != nil {
		parsePath(p, f, pathNode)
	}
	if testsNode != nil {
		f.tests = parseTests(p, testsNode, optionKeys)
	} else if root.kind == mappingNode {
		p.addf(0, "no `tests:` key: list the tests to run, e.g. tests: [{test: tcp_upload, duration: 20s}]")
	}
	if f.title == "" && !seen["name"] {
		f.title = baseName(name)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// maxSeed keeps seeds within the integers a JSON reader that uses doubles
// (JavaScript, jq) reads exactly.
const maxSeed = 1<<53 - 1

// eachPair calls fn for every key and value of a mapping, reporting
// non-scalar keys, duplicate keys and merge keys.
func eachPair(p *problems, m *node, fn func(k, v *node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.content); i += 2 {
		k, v := (m.content[i]), (m.content[i+1])
		if k.kind != scalarNode {
			p.addf(k.line, "a key must be a single word, not a %s", kindName(k))
			continue
		}
		if k.merge {
			p.addf(k.line, "merge keys (<<) are not supported: write the keys out (anchors and aliases of whole values do work)")
			continue
		}
		if first, dup := seen[k.value]; dup {
			p.addf(k.line, "%q is given twice (first at line %d): keep one", k.value, first)
			continue
		}
		seen[k.value] = k.line
		fn(k, v)
	}
}

// scalarText returns a scalar's text, reporting any other shape.
func scalarText(p *problems, key string, v *node) string {
	s, _ := scalarText2(p, key, v)
	return s
}

func scalarText2(p *problems, key string, v *node) (string, bool) {
	if v.kind != scalarNode || v.null {
		p.addf(v.line, "%s needs a single value, not a %s", key, kindName(v))
		return "", false
	}
	return v.value, true
}

// unknownKey says that key is not one of known, with the nearest known key,
// or where a key that belongs elsewhere goes.
func unknownKey(key, where string, known, optionKeys []string) string {
	if where == "an experiment file" && contains(optionKeys, key) {
		return fmt.Sprintf("unknown key %q in %s: %q is a run option; put it in a test entry under tests:", key, where, key)
	}
	if why, ok := reservedKeys[key]; ok && where != "an experiment file" {
		return fmt.Sprintf("%q cannot be set in a test entry: %s", key, why)
	}
	msg := fmt.Sprintf("unknown key %q in %s", key, where)
	if n := nearest(key, known); n != "" {
		return msg + fmt.Sprintf(": did you mean %q?", n)
	}
	return msg + ": the keys are " + strings.Join(known, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// baseName is a file name without directories and extension.
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	return name
}

// parseGrid reads a mapping of variables, each one value or a list of them.
func parseGrid(p *problems, where string, n *node) grid {
	if n.kind != mappingNode {
		p.addf(n.line, "%s is a mapping of variables to their values, e.g. delay: [10ms, 30ms]; not a %s", where, kindName(n))
		return nil
	}
	var g grid
	eachPair(p, n, func(k, v *node) {
		if !varName.MatchString(k.value) {
			p.addf(k.line, "variable name %q: use letters, digits and _, starting with a letter (e.g. one_way_delay)", k.value)
			return
		}
		if _, reserved := reservedVars[k.value]; reserved {
			p.addf(k.line, "variable name %q is reserved for %s: choose another name", k.value, reservedVars[k.value])
			return
		}
		g = append(g, parseVariable(p, k, v))
	})
	return g
}

// reservedVars are names a table uses for the runs' own dimensions.
var reservedVars = map[string]string{
	"test":       "the test of a run (tables lay runs out by it)",
	"repetition": "a run's repetition number",
}

// parseVariable reads one variable's values: a scalar, or a list whose
// elements are scalars or single-pair mappings LABEL: {VAR: VALUE, ...}.
func parseVariable(p *problems, k, v *node) *variable {
	vr := &variable{name: k.value, line: k.line}
	items := []*node{v}
	if v.kind == sequenceNode {
		items = v.content
		if len(items) == 0 {
			p.addf(v.line, "variable %s has no values: give at least one, e.g. %s: [10ms, 30ms]", k.value, k.value)
		}
	}
	labels := map[string]int{}
	for _, it := range items {
		it = (it)
		val, ok := parseValue(p, vr.name, it)
		if !ok {
			continue
		}
		if first, dup := labels[val.label]; dup {
			p.addf(val.line, "variable %s lists %q twice (first at line %d): keep one", vr.name, val.label, first)
			continue
		}
		labels[val.label] = val.line
		vr.values = append(vr.values, val)
	}
	return vr
}

func parseValue(p *problems, name string, it *node) (value, bool) {
	switch {
	case it.kind == scalarNode && !it.null:
		if it.value == "" {
			p.addf(it.line, "variable %s has an empty value: give every value a name that tables can show", name)
			return value{}, false
		}
		if strings.Contains(it.value, "${") {
			p.addf(it.line, "variable %s's value %q uses ${...}: a value names a case; to compute text from it, bind a further variable (%s: [{%s: {other: \"...${...}...\"}}])", name, it.value, name, it.value)
			return value{}, false
		}
		return value{label: it.value, line: it.line}, true
	case it.kind == mappingNode && len(it.content) == 2:
		lk, lv := (it.content[0]), (it.content[1])
		if lk.kind != scalarNode || lk.null || lk.value == "" {
			break
		}
		val, ok := parseValue(p, name, lk)
		if !ok {
			return value{}, false
		}
		if lv.kind != mappingNode {
			p.addf(lv.line, "value %q of variable %s binds further variables with a mapping, e.g. %q: {jitter: 1ms}; not a %s", val.label, name, val.label, kindName(lv))
			return value{}, false
		}
		eachPair(p, lv, func(bk, bv *node) {
			if !varName.MatchString(bk.value) {
				p.addf(bk.line, "variable name %q: use letters, digits and _, starting with a letter", bk.value)
				return
			}
			if bk.value == name {
				p.addf(bk.line, "value %q of variable %s binds %s itself: bind other variables only", val.label, name, name)
				return
			}
			s, ok := scalarText2(p, "bound variable "+bk.value, bv)
			if !ok {
				return
			}
			val.binds = append(val.binds, binding{name: bk.value, text: template{text: s, line: bv.line}})
		})
		return val, true
	}
	p.addf(it.line, "variable %s: a value is a single value (10ms) or a value with bound variables (10ms: {jitter: 1ms}), not a %s", name, kindName(it))
	return value{}, false
}

// parseCases reads the `cases` list: each entry a mapping of variables to
// a value or a list of values (crossed within the entry).
func parseCases(p *problems, n *node) []caseSpec {
	if n.kind != sequenceNode {
		p.addf(n.line, "cases is a list of mappings of variables, e.g. cases: [{delay: 10ms, jitter: 1ms}]; not a %s", kindName(n))
		return nil
	}
	var cs []caseSpec
	for _, it := range n.content {
		it = (it)
		if it.kind != mappingNode {
			p.addf(it.line, "each case is a mapping of variables, e.g. {delay: 10ms, jitter: 1ms}; not a %s", kindName(it))
			continue
		}
		cs = append(cs, caseSpec{line: it.line, vars: parseGrid(p, "a case", it)})
	}
	return cs
}

// parseFilters reads a list of filters.
func parseFilters(p *problems, key string, n *node) []filter {
	if n.kind != sequenceNode {
		p.addf(n.line, "%s is a list of mappings of variables to values, e.g. %s: [{variant: jitter, transport: udp}]; not a %s", key, key, kindName(n))
		return nil
	}
	var fs []filter
	for _, it := range n.content {
		if f := parseFilter(p, key, (it)); f != nil {
			fs = append(fs, *f)
		}
	}
	return fs
}

// parseFilter reads a mapping of variables to a value or a list of values.
func parseFilter(p *problems, key string, n *node) *filter {
	if n.kind != mappingNode {
		p.addf(n.line, "%s takes a mapping of variables to values, e.g. {transport: [udp, cubic]}; not a %s", key, kindName(n))
		return nil
	}
	f := &filter{line: n.line, labels: map[string][]string{}, lines: map[string]int{}}
	eachPair(p, n, func(k, v *node) {
		items := []*node{v}
		if v.kind == sequenceNode {
			items = v.content
		}
		for _, it := range items {
			it = (it)
			if it.kind != scalarNode || it.null {
				p.addf(it.line, "%s: %s takes values of the variable (its labels), not a %s", key, k.value, kindName(it))
				continue
			}
			f.labels[k.value] = append(f.labels[k.value], it.value)
		}
		f.lines[k.value] = k.line
	})
	return f
}

// parsePath reads `path`: up, down, or both.
func parsePath(p *problems, f *file, n *node) {
	if n.kind != mappingNode {
		p.addf(n.line, "path is a mapping with up and down (or both), each a qdisc chain in tc syntax, e.g. path: {both: \"netem delay 20ms\"}; not a %s", kindName(n))
		return
	}
	var both *template
	eachPair(p, n, func(k, v *node) {
		t := template{line: v.line}
		switch k.value {
		case "up", "down", "both":
			if v.kind == scalarNode && v.null {
				// An empty chain is a direct path, as `--up ""` is.
			} else if s, ok := scalarText2(p, "path "+k.value, v); ok {
				t.text = s
			}
		default:
			p.addf(k.line, "%s", unknownKey(k.value, "path", pathKeys, nil))
			return
		}
		switch k.value {
		case "up":
			f.up = t
		case "down":
			f.down = t
		case "both":
			both = &t
		}
	})
	if both != nil {
		if f.up.line != 0 || f.down.line != 0 {
			p.addf(both.line, "path: both sets both directions: give either both, or up and/or down")
			return
		}
		f.up, f.down = *both, *both
	}
}

// parseTests reads the `tests` list.
func parseTests(p *problems, n *node, optionKeys []string) []testSpec {
	if n.kind != sequenceNode || len(n.content) == 0 {
		p.addf(n.line, "tests is a list of test entries, e.g. tests: [{test: tcp_upload, duration: 20s}]; not a %s", kindName(n))
		return nil
	}
	known := append([]string{"test"}, optionKeys...)
	var ts []testSpec
	for _, it := range n.content {
		it = (it)
		if it.kind != mappingNode {
			p.addf(it.line, "a test entry is a mapping: test: NAME and the run's options, e.g. {test: tcp_upload, duration: 20s}; not a %s", kindName(it))
			continue
		}
		t := testSpec{line: it.line}
		eachPair(p, it, func(k, v *node) {
			if k.value == "test" {
				if s, ok := scalarText2(p, "test", v); ok {
					t.test = template{text: s, line: v.line}
				}
				return
			}
			if _, reserved := reservedKeys[k.value]; reserved || !contains(optionKeys, k.value) {
				p.addf(k.line, "%s", unknownKey(k.value, "a test entry", known, nil))
				return
			}
			o := optionSpec{key: k.value, line: k.line}
			items := []*node{v}
			if v.kind == sequenceNode {
				items = v.content
			}
			for _, x := range items {
				x = (x)
				if x.kind != scalarNode || x.null {
					p.addf(x.line, "option %s takes a value or a list of values (for a repeatable option), not a %s", k.value, kindName(x))
					continue
				}
				o.values = append(o.values, template{text: x.value, line: x.line})
			}
			t.options = append(t.options, o)
		})
		if t.test.line == 0 {
			p.addf(it.line, "a test entry needs test: NAME (a `wanlab run` test, e.g. tcp_upload)")
			continue
		}
		ts = append(ts, t)
	}
	return ts
}

// hashContent is the experiment file's identity: the SHA-256 of its bytes.
func hashContent(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
