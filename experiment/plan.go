package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"wanlab/tcspec"
)

// Backend is what an experiment needs from `wanlab run`: the options a test
// entry may set, their validation, and the run itself. The experiment
// package knows nothing of the options' meaning.
type Backend interface {
	// Keys lists the run options a test entry may set besides "test", as
	// experiment files spell them (snake_case, e.g. "duration", "cc").
	Keys() []string
	// Check validates one run before anything runs. A problem with one
	// option's value is an *OptionError naming the key, so that the
	// message points at that option's line; any other error is reported
	// at the test entry's line. Load checks the first repetition of each
	// case's test entries: the others differ from it in their seed alone.
	Check(r *Run) error
	// Estimate is how long r takes from start to end, for the progress
	// line's time left; it is asked once per case and test entry, as
	// Check is.
	Estimate(r *Run) time.Duration
	// Run executes r and writes its results document to path (a name
	// ending in .json.gz). A run whose context is cancelled writes what it
	// measured, marked partial, and returns the context's error.
	Run(ctx context.Context, r *Run, path string) error
}

// OptionError is a bad value of one run option.
type OptionError struct {
	// Key is the option as the experiment file spells it.
	Key string
	// Err says what is wrong and what would be accepted.
	Err error
}

// Error returns "KEY: ERR".
func (e *OptionError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *OptionError) Unwrap() error { return e.Err }

// LoadOptions are what Load needs besides the file.
type LoadOptions struct {
	// Backend gives the known run options and checks every run.
	Backend Backend
	// TC is how the path's chains are parsed (distribution tables).
	TC tcspec.Options
	// Quick keeps only the cases the file's `quick:` key selects, runs
	// each once, and marks every run quick (the backend shortens it).
	Quick bool
}

// Plan is an experiment file expanded into its cases and runs, every
// template substituted and every run checked.
type Plan struct {
	// FileName is the file's name as given; Content its bytes, SHA256
	// their hash (the experiment's identity).
	FileName string
	Content  []byte
	SHA256   string
	// Name and Description are the file's `name` and `description`.
	Name, Description string
	// Seed is the file's `seed`, from which every run's seed is derived.
	Seed uint64
	// Variables are the names that identify a case, in the file's order.
	Variables []string
	// Cases are every case in canonical order (Number 1, 2, ...).
	Cases []*Case
	// Tests is the number of test entries.
	Tests int
	// Repeat is the repetitions of each case (1 when Quick).
	Repeat int
	// Shuffle runs in a random order drawn from ShuffleSeed.
	Shuffle     bool
	ShuffleSeed uint64
	// Pause is the wait between two runs.
	Pause time.Duration
	// Quick says the plan was made with LoadOptions.Quick.
	Quick bool
}

// Case is one combination of the variables' values.
type Case struct {
	// Number is the case's 1-based position in the canonical order.
	Number int
	// Vars are the case's variables (Plan.Variables) and their values.
	Vars []Var
	// Bound are the further variables its values bind, resolved.
	Bound []Var
	// Up and Down are the path's chains after substitution, as written;
	// UpTC and DownTC the same in tc syntax as tcspec prints them (empty
	// for a direct path).
	Up, Down     string
	UpTC, DownTC string
	// Runs are the case's runs: each test entry, each repetition.
	Runs []*Run
	// shown are the variables whose value differs between cases: a
	// variable with one value (a constant shared by every case) says
	// nothing about this case.
	shown []Var
}

// Var is a variable's value.
type Var struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Value returns the value of the named variable (primary or bound).
func (c *Case) Value(name string) (string, bool) {
	for _, v := range c.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	for _, v := range c.Bound {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// Label describes the case by the variables that vary between the
// plan's cases: "delay=10ms transport=udp".
func (c *Case) Label() string {
	if c.shown != nil {
		return varsLabel(c.shown)
	}
	return varsLabel(c.Vars)
}

func varsLabel(vs []Var) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Name + "=" + v.Value
	}
	if len(parts) == 0 {
		return "(no variables)"
	}
	return strings.Join(parts, " ")
}

// key identifies a case by its variables, for seeds and for matching
// cases across shards.
func caseKey(vs []Var) string {
	sorted := append([]Var(nil), vs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	for _, v := range sorted {
		b.WriteString(v.Name)
		b.WriteByte(0)
		b.WriteString(v.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// Run is one run of one test in one case.
type Run struct {
	// Case is the case the run belongs to.
	Case *Case
	// Test is the `wanlab run` test, after substitution.
	Test string
	// TestIndex is the 1-based position of the test entry in `tests`.
	TestIndex int
	// Repetition counts from 1.
	Repetition int
	// Seed is the run's seed, derived from the experiment's seed, the
	// case's variables, the test entry and the repetition: the same run
	// has the same seed in every shard and on every resume.
	Seed uint64
	// Options are the test entry's options after substitution, in the
	// file's order.
	Options []Option
	// Title labels the run in plots and tables.
	Title string
	// File is the results file's name inside the results directory.
	File string
	// Quick asks the backend for a short run: load, lead and tail of a
	// few seconds.
	Quick bool
	// line is the test entry's line, for messages.
	line int
}

// Up returns the run's up chain as written, after substitution.
func (r *Run) Up() string { return r.Case.Up }

// Down returns the run's down chain as written, after substitution.
func (r *Run) Down() string { return r.Case.Down }

// Option is one run option of a test entry.
type Option struct {
	// Key is the option as the file spells it.
	Key string `json:"key"`
	// Values holds one value, or several for an option given as a list
	// (a repeatable option such as sysctl).
	Values []string `json:"values"`
	// Line is the option's line in the file.
	Line int `json:"-"`
}

// Option returns the values of the option key and whether it is set.
func (r *Run) Option(key string) ([]string, bool) {
	for _, o := range r.Options {
		if o.Key == key {
			return o.Values, true
		}
	}
	return nil, false
}

// Load reads, expands and checks an experiment file: every problem (bad
// YAML, unknown keys, undefined ${var}, a chain tc would refuse, a bad
// option value) is found here, before anything runs, and returned as
// Errors naming the file and line.
func Load(name string, content []byte, o LoadOptions) (*Plan, error) {
	if o.Backend == nil {
		return nil, errors.New("experiment: Load needs a Backend")
	}
	f, err := parseFile(name, content, o.Backend.Keys())
	if err != nil {
		return nil, err
	}
	p := newProblems(name)
	if checkSize(f, o, p); len(p.list) > 0 {
		return nil, p.err()
	}
	plan := expand(f, o, p)
	if err := p.err(); err != nil {
		return nil, err
	}
	for _, c := range plan.Cases {
		for _, r := range c.Runs {
			if r.Repetition != 1 {
				// The repetitions of a test entry differ in their seed
				// alone: checking one checks them all, and a thousand
				// repetitions do not cost a thousand checks.
				continue
			}
			if err := o.Backend.Check(r); err != nil {
				line := r.line
				var oe *OptionError
				if errors.As(err, &oe) {
					for _, opt := range r.Options {
						if opt.Key == oe.Key {
							line = opt.Line
						}
					}
				}
				p.addCase(line, c.Label(), "%s", err.Error())
			}
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return plan, nil
}

// maxRuns bounds the runs of one experiment file: every run is a case of
// its own in memory before anything runs, and a grid of a few variables
// of many values each (1000 × 1000) would otherwise take gigabytes and
// minutes before the first line of output. 10⁵ runs of the shortest
// useful length (a few seconds) already take days.
const maxRuns = 100_000

// sizeCap is where counting stops: a product past it is only "more".
const sizeCap = 1 << 62

// checkSize counts the runs a file asks for from the sizes of its grids,
// before any combination is made, and refuses more than maxRuns. The
// count is exact for vars, cases and --quick's selection; exclude is not
// counted (it needs the combinations themselves), so with exclude it is
// an upper bound, and the message says so.
func checkSize(f *file, o LoadOptions, p *problems) {
	entries := f.cases
	if len(entries) == 0 {
		entries = []caseSpec{{}}
	}
	quick := o.Quick && f.quickLine != 0
	var cases uint64
	for _, e := range entries {
		n := uint64(1)
		all := append(append(grid(nil), e.vars...), f.vars...)
		if quick {
			// --quick keeps a case only when every variable it names
			// is among the case's, with one of its labels.
			for name := range f.quick.labels {
				if !slices.ContainsFunc(all, func(v *variable) bool { return v.name == name }) {
					n = 0
				}
			}
		}
		for _, v := range all {
			size := len(v.values)
			if ls, ok := f.quick.labels[v.name]; quick && ok {
				size = 0
				for _, val := range v.values {
					if slices.Contains(ls, val.label) {
						size++
					}
				}
			}
			n = mulCapped(n, uint64(size))
		}
		cases = min(cases+n, sizeCap)
	}
	repeat := f.repeat
	if o.Quick {
		repeat = 1
	}
	runs := mulCapped(mulCapped(cases, uint64(len(f.tests))), uint64(repeat))
	if runs <= maxRuns {
		return
	}
	count := func(n uint64) string {
		if n >= sizeCap {
			return fmt.Sprintf("more than %d", uint64(sizeCap))
		}
		return strconv.FormatUint(n, 10)
	}
	what := fmt.Sprintf("%s runs (%s cases × %s × %s)", count(runs), count(cases), plural(len(f.tests), "test"), plural(repeat, "repetition"))
	if len(f.exclude) > 0 {
		what = "up to " + what + ", before exclude"
	}
	p.addf(0, "the file asks for %s, more than the %d an experiment may have: use fewer values, list the combinations you want under cases: instead of crossing every variable, or split it into several files", what, maxRuns)
}

// mulCapped multiplies without overflow, stopping at sizeCap.
func mulCapped(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 || lo > sizeCap {
		return sizeCap
	}
	return lo
}

// choice is a variable's chosen value in one combination.
type choice struct {
	v   *variable
	val *value
}

// expand builds the plan's cases and runs from a parsed file, reporting
// problems to p.
func expand(f *file, o LoadOptions, p *problems) *Plan {
	plan := &Plan{
		FileName: f.name, Content: f.content, SHA256: hashContent(f.content),
		Name: f.title, Description: f.description, Seed: f.seed,
		Tests: len(f.tests), Repeat: f.repeat, Shuffle: f.shuffle, Pause: f.pause, Quick: o.Quick,
	}
	if o.Quick {
		plan.Repeat = 1
	}
	if f.shuffle {
		plan.ShuffleSeed = deriveSeed(f.seed, "shuffle")
	}
	entries := f.cases
	if len(entries) == 0 {
		entries = []caseSpec{{}}
	}
	// The canonical variable order: the first entry's, then vars'.
	global := map[string]int{}
	for _, v := range f.vars {
		global[v.name] = v.line
	}
	var order []string
	for _, v := range entries[0].vars {
		order = append(order, v.name)
	}
	for _, v := range f.vars {
		order = append(order, v.name)
	}
	plan.Variables = order
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	labels := map[string]map[string]bool{} // variable -> its labels, over all entries
	var combos [][]choice
	for ei, e := range entries {
		names := map[string]bool{}
		for _, v := range e.vars {
			names[v.name] = true
			if gl, dup := global[v.name]; dup {
				p.addf(v.line, "variable %s is both in this case and in vars (line %d): give it in one place", v.name, gl)
			}
		}
		if ei > 0 {
			for _, v := range e.vars {
				if _, ok := pos[v.name]; !ok {
					p.addf(v.line, "variable %s is not in the first case (line %d): every case gives the same variables (%s)", v.name, entries[0].line, strings.Join(order, ", "))
				}
			}
			for _, v := range entries[0].vars {
				if !names[v.name] {
					p.addf(e.line, "this case does not give %s, which the first case (line %d) gives: every case gives the same variables", v.name, entries[0].line)
				}
			}
		}
		all := append(append(grid(nil), e.vars...), f.vars...)
		for _, v := range all {
			if labels[v.name] == nil {
				labels[v.name] = map[string]bool{}
			}
			for _, val := range v.values {
				labels[v.name][val.label] = true
			}
		}
		combos = append(combos, cross(all)...)
	}
	if len(p.list) > 0 {
		return plan
	}
	for _, fl := range f.exclude {
		checkFilter(p, "exclude", fl, order, labels)
	}
	if o.Quick && f.quickLine != 0 {
		checkFilter(p, "quick", f.quick, order, labels)
	}
	seen := map[string]int{}
	for _, combo := range combos {
		sort.SliceStable(combo, func(i, j int) bool { return pos[combo[i].v.name] < pos[combo[j].v.name] })
		vars := make([]Var, len(combo))
		for i, ch := range combo {
			vars[i] = Var{ch.v.name, ch.val.label}
		}
		if excluded(f.exclude, vars) || (o.Quick && f.quickLine != 0 && !f.quick.matches(vars)) {
			continue
		}
		key := caseKey(vars)
		if first, dup := seen[key]; dup {
			p.addf(combo[0].val.line, "the case %s comes twice (the first is case %d): each combination of values may appear once", varsLabel(vars), first)
			continue
		}
		c := &Case{Number: len(plan.Cases) + 1, Vars: vars}
		seen[key] = c.Number
		plan.Cases = append(plan.Cases, c)
		fillCase(f, plan, c, combo, o, p)
	}
	plan.markShown()
	plan.nameRuns()
	if len(plan.Cases) == 0 && len(p.list) == 0 {
		line := 0
		if len(f.exclude) > 0 {
			line = f.exclude[0].line
		}
		if o.Quick && f.quickLine != 0 {
			line = f.quickLine
		}
		p.addf(line, "no case is left to run: exclude (or quick) removes every combination")
	}
	return plan
}

// cross returns every combination of the grid's values, the first
// variable varying slowest.
func cross(g grid) [][]choice {
	combos := [][]choice{nil}
	for _, v := range g {
		var next [][]choice
		for _, c := range combos {
			for i := range v.values {
				next = append(next, append(append([]choice(nil), c...), choice{v, &v.values[i]}))
			}
		}
		combos = next
	}
	return combos
}

// checkFilter reports a filter that names an unknown variable or value:
// a typo there would silently keep or drop the wrong cases.
func checkFilter(p *problems, key string, fl filter, order []string, labels map[string]map[string]bool) {
	for name, ls := range fl.labels {
		line := fl.lines[name]
		if labels[name] == nil {
			msg := fmt.Sprintf("%s: %s is not a variable of the cases (%s)", key, name, strings.Join(order, ", "))
			if n := nearest(name, order); n != "" {
				msg += fmt.Sprintf(": did you mean %s?", n)
			}
			p.addf(line, "%s", msg)
			continue
		}
		var known []string
		for l := range labels[name] {
			known = append(known, l)
		}
		sort.Strings(known)
		for _, l := range ls {
			if !labels[name][l] {
				msg := fmt.Sprintf("%s: %s has no value %q (its values are %s)", key, name, l, strings.Join(known, ", "))
				if n := nearest(l, known); n != "" {
					msg += fmt.Sprintf(": did you mean %q?", n)
				}
				p.addf(line, "%s", msg)
			}
		}
	}
}

// matches reports whether the case's variables satisfy the filter.
func (fl filter) matches(vars []Var) bool {
	for name, ls := range fl.labels {
		ok := false
		for _, v := range vars {
			if v.Name == name && contains(ls, v.Value) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func excluded(fs []filter, vars []Var) bool {
	for _, fl := range fs {
		if fl.matches(vars) {
			return true
		}
	}
	return false
}

// fillCase resolves a case's bound variables, substitutes its path and
// tests, parses its chains and makes its runs.
func fillCase(f *file, plan *Plan, c *Case, combo []choice, o LoadOptions, p *problems) {
	label := c.Label()
	primary := map[string]string{}
	lines := map[string]int{} // where each variable's value is written
	for _, ch := range combo {
		primary[ch.v.name] = ch.val.label
		lines[ch.v.name] = ch.val.line
	}
	bound := map[string]binding{}
	var boundOrder []string
	for _, ch := range combo {
		for _, b := range ch.val.binds {
			if _, clash := primary[b.name]; clash {
				p.addf(b.text.line, "%s is a variable of the cases and cannot also be bound by a value: rename one", b.name)
				continue
			}
			if prev, dup := bound[b.name]; dup && prev.text.text != b.text.text {
				p.addCase(b.text.line, label, "%s is bound twice, differently (also at line %d): bind it in one variable's values", b.name, prev.text.line)
				continue
			} else if dup {
				continue
			}
			bound[b.name] = b
			boundOrder = append(boundOrder, b.name)
			lines[b.name] = b.text.line
		}
	}
	resolved := map[string]string{}
	resolving := map[string]bool{}
	cyclic := map[string]bool{}
	var lookup func(name string) (string, bool)
	lookup = func(name string) (string, bool) {
		if v, ok := primary[name]; ok {
			return v, true
		}
		if v, ok := resolved[name]; ok {
			return v, true
		}
		b, ok := bound[name]
		if !ok {
			return "", false
		}
		if resolving[name] {
			cyclic[name] = true
			return "", false
		}
		resolving[name] = true
		defer delete(resolving, name)
		v, _, err := Substitute(b.text.text, lookup)
		if err != nil {
			return "", false
		}
		resolved[name] = v
		return v, true
	}
	allNames := allVariableNames(f)
	subst := func(t template, what string) (string, bool) {
		v, _, err := Substitute(t.text, lookup)
		if err != nil {
			p.addCase(t.line, label, "%s", describeSubstError(what, err, bound, cyclic, allNames))
			return "", false
		}
		return v, true
	}
	for _, name := range boundOrder {
		if v, ok := subst(bound[name].text, "bound variable "+name); ok {
			c.Bound = append(c.Bound, Var{name, v})
		}
	}
	var ok bool
	var fromUp, fromDown []string
	if c.Up, ok = subst(f.up, "path up"); ok {
		_, fromUp, _ = Substitute(f.up.text, lookup)
		c.UpTC = parseChain(p, label, "up", f.up.line, c.Up, fromUp, lines, o.TC)
	}
	if c.Down, ok = subst(f.down, "path down"); ok {
		_, fromDown, _ = Substitute(f.down.text, lookup)
		c.DownTC = parseChain(p, label, "down", f.down.line, c.Down, fromDown, lines, o.TC)
	}
	for rep := 1; rep <= plan.Repeat; rep++ {
		for ti, t := range f.tests {
			r := &Run{Case: c, TestIndex: ti + 1, Repetition: rep, Quick: o.Quick, line: t.line}
			var ok bool
			if r.Test, ok = subst(t.test, "test"); !ok {
				continue
			}
			for _, os := range t.options {
				opt := Option{Key: os.key, Line: os.line}
				for _, vt := range os.values {
					v, ok := subst(vt, "option "+os.key)
					if !ok {
						continue
					}
					opt.Values = append(opt.Values, v)
				}
				r.Options = append(r.Options, opt)
			}
			r.Seed = deriveSeed(f.seed, caseKey(c.Vars), strconv.Itoa(r.TestIndex), strconv.Itoa(rep))
			c.Runs = append(c.Runs, r)
		}
	}
}

// allVariableNames lists every variable a file defines anywhere, for
// suggestions.
func allVariableNames(f *file) []string {
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	grids := []grid{f.vars}
	for _, c := range f.cases {
		grids = append(grids, c.vars)
	}
	for _, g := range grids {
		for _, v := range g {
			add(v.name)
			for _, val := range v.values {
				for _, b := range val.binds {
					add(b.name)
				}
			}
		}
	}
	return names
}

// describeSubstError words a substitution error for a template.
func describeSubstError(what string, err error, bound map[string]binding, cyclic map[string]bool, all []string) string {
	var ue *undefinedError
	if !errors.As(err, &ue) {
		return what + ": " + err.Error()
	}
	name := ue.name
	if b, ok := bound[name]; ok {
		if cyclic[name] {
			return fmt.Sprintf("%s: ${%s} refers back to itself through its binding at line %d: break the cycle", what, name, b.text.line)
		}
		return fmt.Sprintf("%s: ${%s} cannot be resolved: its binding at line %d fails (see the message there)", what, name, b.text.line)
	}
	if contains(all, name) {
		return fmt.Sprintf("%s: ${%s} is not defined in this case: bind %s in every value that this case can take, or leave it out of the template", what, name, name)
	}
	msg := fmt.Sprintf("%s: ${%s} is not defined", what, name)
	if len(all) == 0 {
		return msg + ": the file has no variables; define it under vars:"
	}
	if n := nearest(name, all); n != "" {
		return msg + fmt.Sprintf(": did you mean ${%s}?", n)
	}
	return msg + ": the variables are " + strings.Join(all, ", ")
}

// parseChain parses a substituted chain as tc would and returns it in tc
// syntax, reporting tc's message at the template's line.
func parseChain(p *problems, label, dir string, line int, text string, used []string, lines map[string]int, opt tcspec.Options) string {
	specs, err := tcspec.ParseChain(text, opt)
	if err != nil {
		detail := fmt.Sprintf("the chain was %q", text)
		for _, name := range dedupe(used) {
			if l := lines[name]; l != 0 {
				detail += fmt.Sprintf("; ${%s} from line %d", name, l)
			}
		}
		p.addDetail(line, label, detail, "path %s: %v", dir, err)
		return ""
	}
	return tcspec.FormatChain(specs)
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// deriveSeed hashes the experiment's seed with the parts that identify a
// run into a seed that fits a JSON double exactly.
func deriveSeed(base uint64, parts ...string) uint64 {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], base)
	h.Write([]byte("wanlab experiment seed\x00"))
	h.Write(b[:])
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0xff})
	}
	sum := h.Sum(nil)
	return binary.BigEndian.Uint64(sum[:8]) & maxSeed
}

// Runs returns the runs of the cases in shard s, in the order they run:
// every case's first repetition before any second one (so that drift over
// hours spreads across cases, not into one), tests in the file's order,
// then shuffled when the file asks.
func (p *Plan) Runs(s Shard) []*Run {
	byRep := make([][]*Run, p.Repeat)
	n := 0
	for _, c := range p.Cases {
		if !s.Contains(c.Number) {
			continue
		}
		for _, r := range c.Runs {
			byRep[r.Repetition-1] = append(byRep[r.Repetition-1], r)
			n++
		}
	}
	runs := make([]*Run, 0, n)
	for _, rs := range byRep {
		runs = append(runs, rs...)
	}
	if p.Shuffle {
		rng := rand.New(rand.NewPCG(p.ShuffleSeed, uint64(s.K)<<32|uint64(s.N)))
		rng.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	}
	return runs
}

// nameRuns gives every run its results file name and title. The name
// holds the case's number, the test and the repetition
// ("c007-tcp_upload-r2.json.gz", with the entry's number when the file
// has several tests); the index maps it to the case's variables.
func (p *Plan) nameRuns() {
	width := max(3, len(strconv.Itoa(len(p.Cases))))
	for _, c := range p.Cases {
		for _, r := range c.Runs {
			test := fileWord(r.Test)
			if p.Tests > 1 {
				test = fmt.Sprintf("t%d-%s", r.TestIndex, test)
			}
			r.File = fmt.Sprintf("c%0*d-%s-r%d.json.gz", width, c.Number, test, r.Repetition)
			r.Title = p.Name + " " + c.Label()
			if p.Tests > 1 {
				r.Title += " " + r.Test
			}
			if p.Repeat > 1 {
				r.Title += fmt.Sprintf(" #%d", r.Repetition)
			}
		}
	}
}

// fileWord keeps the characters of a test name that are safe in a file
// name everywhere.
func fileWord(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "test"
	}
	return string(b)
}

// markShown records in each case the variables that vary between cases,
// for its label.
func (p *Plan) markShown() {
	varies := map[string]bool{}
	first := map[string]string{}
	for _, c := range p.Cases {
		for _, v := range c.Vars {
			if f, ok := first[v.Name]; !ok {
				first[v.Name] = v.Value
			} else if f != v.Value {
				varies[v.Name] = true
			}
		}
	}
	if len(varies) == 0 {
		return
	}
	for _, c := range p.Cases {
		c.shown = []Var{}
		for _, v := range c.Vars {
			if varies[v.Name] {
				c.shown = append(c.shown, v)
			}
		}
	}
}
