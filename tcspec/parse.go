package tcspec

import (
	"strings"

	"wanlab/qdisc"
)

// Options carries what parsing needs from outside the pure core.
type Options struct {
	// LoadDist loads a netem distribution table by name (a .dist file);
	// called only for names that are not built in ("uniform", "normal",
	// "pareto", "paretonormal", which produce qdisc.Distribution{Name: name}
	// with a nil Table: netem resolves them).
	LoadDist func(name string) ([]int16, error)
	// LinkSpeed is the device speed in bit/s for "N%" rates; 0 makes a
	// percent rate an error that says so.
	LinkSpeed uint64
}

// kind is one row of the registry: how tcspec reads and prints one tc kind.
type kind struct {
	name   string
	parse  func(a *args, opt Options) (qdisc.Spec, error)
	format func(qdisc.Spec) (string, bool)
}

// kinds is the registry, in the order messages list the kinds: adding a
// discipline is adding a row (and one in package qdisc's, which a test
// checks this one against).
var kinds = []kind{
	{"netem", parseNetem, formatAs(formatNetem)},
	{"tbf", parseTBF, formatAs(formatTBF)},
	{"pfifo", parseFifo, formatAs(formatFifo)},
	{"bfifo", parseFifo, formatAs(formatFifo)},
	{"pfifo_head_drop", parseFifo, formatAs(formatFifo)},
	{"pfifo_fast", parsePfifoFast, formatAs(func(qdisc.PfifoFastConfig) string { return "pfifo_fast" })},
	{"codel", parseCoDel, formatAs(formatCoDel)},
	{"fq_codel", parseFQCoDel, formatAs(formatFQCoDel)},
	{"pie", parsePIE, formatAs(formatPIE)},
	{"fq_pie", parseFQPIE, formatAs(formatFQPIE)},
	{"red", parseRED, formatAs(formatRED)},
	{"sfq", parseSFQ, formatAs(formatSFQ)},
	{"dualpi2", parseDualPI2, formatAs(formatDualPI2)},
	{"cake", parseCake, formatAs(formatCake)},
	{"htb", parseHTB, formatAs(formatHTB)},
	{"prio", parsePrio, formatAs(formatPrio)},
}

// lookup returns the row of the kind named name.
func lookup(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// formatAs adapts a printer of configuration type C to the registry; it
// reports false for a Spec of another type (a pointer, say).
func formatAs[C qdisc.Spec](f func(C) string) func(qdisc.Spec) (string, bool) {
	return func(s qdisc.Spec) (string, bool) {
		c, ok := s.(C)
		if !ok {
			return "", false
		}
		return f(c), true
	}
}

// kindNames lists the kinds, for messages.
func kindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// Parse reads one qdisc: its kind and options as tc takes them ("netem
// delay 100ms 10ms 25%"), or a whole pasted command ("tc qdisc add dev eth0
// root netem delay 100ms"), whose dev, handle and parent are ignored. Fields
// that tc or the kernel default are filled in. Errors are *Error.
func Parse(s string, opt Options) (qdisc.Spec, error) {
	elems := split(s)
	switch len(elems) {
	case 0:
		return nil, failf("", "", "no qdisc given: write e.g. \"netem delay 100ms\"")
	case 1:
		return parseElem(elems[0], opt)
	}
	return nil, failf("", "", "%d qdiscs given: Parse reads one; read a chain with ParseChain", len(elems))
}

// ParseChain reads "QDISC; QDISC; ...": the first is the root and each next
// one the child of the one before. Each element may be a pasted tc command;
// newlines separate elements as ";" does, a backslash at the end of a line
// continues it, and "#" starts a comment. An empty chain is nil, nil.
// Errors are *Error with Index set to the offending element.
//
// A chain may also be a tree, given as the tc lines that make it on one
// device (any name): tc class and tc filter lines, or a tc qdisc line of
// htb or prio, make the text a script (ParseScript),
// applied to the device from nothing as the kernel would; its errors are
// *ScriptError. FormatChain writes a tree so.
func ParseChain(s string, opt Options) ([]qdisc.Spec, error) {
	elems := split(s)
	if isScript(elems) {
		return parseChainScript(s, opt)
	}
	var specs []qdisc.Spec
	for i, e := range elems {
		spec, err := parseElem(e, opt)
		if err != nil {
			if te, ok := err.(*Error); ok {
				te.Index = i
			}
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// Format prints s in tc syntax ("netem limit 1000 delay 100ms 10ms 25%"):
// the options tc -s qdisc show would print, in forms that read back
// exactly (times and sizes in their largest exact unit, rates in bits).
// For every value Parse returns, Parse(Format(x)) equals x, provided
// LoadDist returns the same table for the same name. Configs built by hand
// with values no tc syntax produces (a zero netem limit, a codel target
// below 1us) print as the nearest tc line. A Spec that is not one of
// package qdisc's configuration values (a pointer to one, another kind)
// prints as its kind alone; nil prints as "".
func Format(s qdisc.Spec) string {
	if s == nil {
		return ""
	}
	if k, ok := lookup(s.Kind()); ok {
		if text, ok := k.format(s); ok {
			return text
		}
	}
	return s.Kind()
}

// FormatChain prints a chain as ParseChain reads it, joined with "; ".
// A chain with a tree (HasTree) prints as the tc lines that make it on a
// device called DEV (FormatScript), joined with "; ".
func FormatChain(specs []qdisc.Spec) string {
	if HasTree(specs) {
		return strings.Join(FormatScript(specs, scriptDevice), "; ")
	}
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = Format(s)
	}
	return strings.Join(parts, "; ")
}

// split cuts text into the word lists of its qdiscs.
func split(s string) [][]string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\\\n", " ")
	var elems [][]string
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, part := range strings.Split(line, ";") {
			if w := strings.Fields(part); len(w) > 0 {
				elems = append(elems, w)
			}
		}
	}
	return elems
}

// parseElem reads one qdisc, bare or inside a tc command.
func parseElem(words []string, opt Options) (qdisc.Spec, error) {
	if words[0] == "tc" || words[0] == "sudo" || matches(words[0], "qdisc") {
		var err error
		if words, err = stripCommand(words); err != nil {
			return nil, err
		}
	}
	name := words[0]
	k, ok := lookup(name)
	if !ok {
		return nil, unknownKind(name)
	}
	return k.parse(&args{kind: name, words: words[1:]}, opt)
}

// unsupported are tc qdiscs that wanlab does not emulate (yet); a kind
// leaves the list when it joins kinds (TestUnsupportedAreNotKinds).
var unsupported = map[string]bool{
	"hfsc": true, "fq": true, "choke": true, "sfb": true, "drr": true, "ets": true, "qfq": true, "cbs": true,
	"etf": true, "taprio": true, "mqprio": true, "multiq": true, "mq": true, "hhf": true, "gred": true,
	"plug": true, "skbprio": true, "cbq": true, "dsmark": true, "atm": true,
	"ingress": true, "clsact": true, "noqueue": true,
}

func unknownKind(kind string) error {
	list := kindNames()
	if _, ok := lookup(strings.ToLower(kind)); ok {
		return failf("", kind, "unknown qdisc %q: tc's kind names are lower case: write %q", kind, strings.ToLower(kind))
	}
	if unsupported[kind] {
		return failf("", kind, "qdisc %q is not supported by wanlab; it emulates %s", kind, list)
	}
	return failf("", kind, "unknown qdisc %q: wanlab emulates %s", kind, list)
}

// stripCommand removes "[sudo] tc [OPTIONS] qdisc add|change|replace dev
// DEV (root | parent X:Y) [handle X:] ..." and returns KIND OPTIONS.
func stripCommand(w []string) ([]string, error) {
	line := strings.Join(w, " ")
	if w[0] == "sudo" {
		w = w[1:]
	}
	if len(w) > 0 && w[0] == "tc" {
		w = w[1:]
		for len(w) > 0 && strings.HasPrefix(w[0], "-") {
			o := w[0]
			switch {
			case matches(o, "-batch") && len(o) > 1:
				return nil, failf("", o, "%q: tc -batch reads commands from a file; paste the commands themselves", line)
			case (matches(o, "-netns") || o == "-cf" || matches(o, "-conf")) && len(o) > 1:
				w = w[1:] // the option's argument
			}
			if len(w) > 0 {
				w = w[1:]
			}
		}
	}
	if len(w) == 0 || !matches(w[0], "qdisc") {
		tok := ""
		if len(w) > 0 {
			tok = w[0]
		}
		return nil, failf("", tok, "%q: only \"tc qdisc\" commands describe a qdisc; write \"tc qdisc add dev DEV root KIND OPTIONS\"", line)
	}
	w = w[1:]
	if len(w) == 0 {
		return nil, failf("", "", "%q: no command: write \"tc qdisc add dev DEV root KIND OPTIONS\"", line)
	}
	// tc tries its subcommands in this order, each by prefix.
	switch cmd := w[0]; {
	case matches(cmd, "add"), matches(cmd, "change"), matches(cmd, "replace"):
	case matches(cmd, "link"), matches(cmd, "delete"), matches(cmd, "list"), matches(cmd, "show"), matches(cmd, "lst"), matches(cmd, "get"), matches(cmd, "help"):
		return nil, failf("", cmd, "%q: \"tc qdisc %s\" does not configure a qdisc; wanlab reads add, change or replace commands", line, cmd)
	default:
		return nil, failf("", cmd, "%q: unknown tc qdisc command %q: write add, change or replace", line, cmd)
	}
	w = w[1:]
	for len(w) > 0 {
		// In tc's order: ingress and clsact are whole words, tried before
		// the ingress_block prefix.
		switch o := w[0]; {
		case o == "ingress" || o == "clsact":
			return nil, failf("", o, "%q: %s is not a queueing discipline; wanlab shapes with netem, tbf, fifos, codel, fq_codel, pie, htb and prio", line, o)
		case o == "dev" || o == "handle" || o == "parent" || matches(o, "ingress_block") || matches(o, "egress_block"):
			if len(w) < 2 {
				return nil, failf("", o, "%q: %q needs a value", line, o)
			}
			w = w[2:]
		case o == "root":
			w = w[1:]
		case matches(o, "estimator"):
			if len(w) < 3 {
				return nil, failf("", o, "%q: \"estimator\" needs an interval and a time constant", line)
			}
			w = w[3:]
		case matches(o, "stab"):
			return nil, failf("", o, "%q: size tables (stab) are not supported by wanlab; use tbf's overhead/mpu/linklayer or netem's rate overheads", line)
		case matches(o, "help"):
			return nil, failf("", o, "%q: write \"tc qdisc add dev DEV root KIND OPTIONS\"", line)
		default:
			return w, nil
		}
	}
	return nil, failf("", "", "%q: no qdisc kind: write e.g. \"tc qdisc add dev eth0 root netem delay 100ms\"", line)
}
