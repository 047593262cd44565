package tcspec

import (
	"errors"
	"fmt"
	"strings"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// Step is a device's chain after one command of a script: what applying
// the command as one change of the chain (qdisc.ChangeChain, a router's
// SetChain) does, so that the kernel's refusals that depend on the tree as
// it is (a class in use, an option htb cannot change) come at the line
// that asks for them.
type Step struct {
	// Line and Command say where the command is, as ScriptError does;
	// Text is the command.
	Line, Command int
	Text          string
	// Chain is the device's chain after the command (empty: no qdisc).
	Chain []qdisc.Spec
}

// errorf returns a *ScriptError about the step's command.
func (s Step) errorf(format string, args ...any) *ScriptError {
	return &ScriptError{Line: s.Line, Command: s.Command, Text: s.Text, Msg: shortenQuotes(fmt.Sprintf(format, args...))}
}

// Steps applies the script's commands, in order, to base (a device's
// chain, empty for none) as the kernel would, and returns the chain after
// each command that changed it. The qdiscs that base has keep the handles
// FormatScript gives them (an htb's or prio's own; 1:, 2:, ... down a
// chain; MIN: on a class MAJ:MIN). A command the kernel would refuse on
// the tree as it is, is a *ScriptError, unless the script silences it
// (2>/dev/null, || true): then it changes nothing, as the script would go
// on past it. Steps checks the tree as tc and the kernel's scheduling
// core do; CheckSteps then builds each step.
func (s *Script) Steps(base []qdisc.Spec) ([]Step, error) {
	t := treeOf(base)
	var steps []Step
	for _, c := range s.cmds {
		if err := t.apply(c); err != nil {
			var se *stateError
			if errors.As(err, &se) && c.quiet {
				continue
			}
			return nil, c.fail("%s", err.Error())
		}
		st := Step{Line: c.line, Text: c.text(), Chain: t.chain()}
		if c.nlines > 1 {
			st.Command = c.nth
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// CheckSteps builds base on a device like env's (nil: an Ethernet device
// of MTU 1500) and changes it into each step's chain in turn, as a
// router's SetChain would: the first step it cannot take is a
// *ScriptError naming its line and the discipline's own refusal. It
// changes nothing of env.
func CheckSteps(base []qdisc.Spec, steps []Step, env *qdisc.Env) error {
	scratch := scratchEnv(env)
	var root qdisc.Qdisc
	if len(base) > 0 {
		var err error
		if root, err = qdisc.Build(base, scratch); err != nil {
			return fmt.Errorf("the tree the script starts from does not build: %w", err)
		}
	}
	for _, st := range steps {
		r, _, err := qdisc.ChangeChain(clock.Time(0), root, st.Chain, scratch)
		if err != nil {
			return st.errorf("%v", err)
		}
		root = r
	}
	return nil
}

// scratchEnv is a copy of env (or a default device) with no observer and
// a pool of its own, for building trees that carry no packets.
func scratchEnv(env *qdisc.Env) *qdisc.Env {
	var e qdisc.Env
	if env != nil {
		e = *env
	}
	e.Observer, e.Root = nil, nil
	// netem's duplication refuses to build without a pool.
	e.Pool = packet.NewPool(2048, 16)
	return &e
}

// Chain applies the script to a device without qdiscs of its own (Steps
// from nothing), checks every step (CheckSteps on env's device) and
// returns the chain it leaves: nil for none.
func (s *Script) Chain(env *qdisc.Env) ([]qdisc.Spec, error) {
	steps, err := s.Steps(nil)
	if err != nil {
		return nil, err
	}
	if err := CheckSteps(nil, steps, env); err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, nil
	}
	return steps[len(steps)-1].Chain, nil
}

// HasTree reports whether chain holds a classful qdisc with classes of
// its own (htb, prio): whether it needs tc lines (FormatScript) to be
// written out whole.
func HasTree(chain []qdisc.Spec) bool {
	for _, s := range chain {
		if withClasses(s) {
			return true
		}
	}
	return false
}

// FormatScript writes chain as the tc lines that make it on device dev,
// one command a line: each qdisc (root, or parent MAJ:MIN) with its
// handle (see Steps), then, for htb, its classes in the order they were
// made, the qdiscs under classes and bands, and the filters in the order
// they run at each attachment point. ParseScript reads them back into the
// same chain.
func FormatScript(chain []qdisc.Spec, dev string) []string {
	t := treeOf(chain)
	var lines []string
	var walk func(n *tnode, at string)
	walk = func(n *tnode, at string) {
		if n == nil {
			return
		}
		handle := fmt.Sprintf(" handle %x:", n.handle)
		if withClasses(n.spec) && specHandle(n.spec) == 0 {
			// The kernel's first automatic handle, which the line
			// leaves to it as the configuration does.
			handle = ""
		}
		lines = append(lines, fmt.Sprintf("tc qdisc add dev %s %s%s %s", dev, at, handle, Format(n.spec)))
		switch c := n.spec.(type) {
		case qdisc.HTBConfig:
			for _, cl := range c.Classes {
				lines = append(lines, fmt.Sprintf("tc class add dev %s parent %v classid %v %s", dev, classParent(cl.Parent, n.handle), cl.ID, formatHTBClass(cl)))
			}
			for _, cl := range c.Classes {
				walk(n.leaves[cl.ID.Minor()], "parent "+cl.ID.String())
			}
			lines = append(lines, filterLines(c.Filters, n.handle, dev)...)
		case qdisc.PrioConfig:
			for _, b := range sortedKeys(n.leaves) {
				walk(n.leaves[b], "parent "+qdisc.MakeClassID(n.handle, b).String())
			}
			lines = append(lines, filterLines(c.Filters, n.handle, dev)...)
		default:
			walk(n.child, fmt.Sprintf("parent %x:1", n.handle))
		}
	}
	walk(t.root, "root")
	return lines
}

// classParent is a class's parent as a tc class line gives it: MAJ: for
// a root class.
func classParent(p qdisc.ClassID, handle uint16) qdisc.ClassID {
	if p == 0 {
		return qdisc.MakeClassID(handle, 0)
	}
	return p
}

// filterLines writes filters as tc filter lines, each at its attachment
// point with its protocol and prio.
func filterLines(fs []qdisc.Filter, handle uint16, dev string) []string {
	var lines []string
	for _, f := range fs {
		lines = append(lines, fmt.Sprintf("tc filter add dev %s parent %v protocol %v prio %d %s", dev, attachName(f.Parent, handle), f.Protocol, f.Prio, formatFilter(f)))
	}
	return lines
}

// scriptDevice is the device name a tree's tc lines give when they stand
// for a direction of wanlab's (FormatChain).
const scriptDevice = "DEV"

// parseChainScript reads a chain given as tc lines with classes or
// filters (ParseChain's second form): one device's, applied from nothing.
func parseChainScript(s string, opt Options) ([]qdisc.Spec, error) {
	sc, err := ParseScript(s, ScriptOptions{Options: opt})
	if err != nil {
		return nil, err
	}
	if _, err := sc.Device(); err != nil {
		return nil, err
	}
	return sc.Chain(nil)
}

// isScript reports whether the elements of a chain are tc lines that make
// a tree: a class or filter line, or a tc line of a qdisc with classes of
// its own (htb, prio), whose handle its classes and filters name.
func isScript(elems [][]string) bool {
	for _, w := range elems {
		if w[0] != "tc" && w[0] != "sudo" && !strings.HasSuffix(w[0], "/tc") {
			continue
		}
		rest := w[1:]
		if w[0] == "sudo" && len(rest) > 0 {
			rest = rest[1:]
		}
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			rest = rest[1:]
		}
		if len(rest) > 0 && (matches(rest[0], "class") || matches(rest[0], "filter")) {
			return true
		}
		if kind, err := stripCommand(w); err == nil && (kind[0] == "htb" || kind[0] == "prio") {
			return true
		}
	}
	return false
}
