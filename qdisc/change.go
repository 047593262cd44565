package qdisc

import (
	"fmt"
	"strings"

	"wanlab/clock"
)

// specAs returns spec as the configuration type C of q, or an error naming
// both kinds when it is of another kind or type (a pointer, say).
func specAs[C Spec](q Qdisc, spec Spec) (C, error) {
	c, ok := spec.(C)
	if !ok {
		if spec == nil {
			return c, fmt.Errorf("%s: no configuration given", q.Kind())
		}
		return c, fmt.Errorf("%s: cannot take a %s configuration (%T) in place; give a %T", q.Kind(), spec.Kind(), spec, c)
	}
	return c, nil
}

// flushRing drops every packet of r, reported by from with ReasonFlushed.
func flushRing(now clock.Time, r *ring, from Qdisc, env *Env, u units, st *Stats) {
	for p := r.Pop(); p != nil; p = r.Pop() {
		dropUnits(now, p, from, env, u, st, ReasonFlushed)
	}
}

// trimHead drops up to excess units from the head of r, reported by from
// with ReasonLimit: what codel_change and pie_change do to a queue longer
// than a new limit. A unit c holds is not in the queue the kernel trims
// (it is the peeked skb) and stays.
func trimHead(now clock.Time, r *ring, c *cursor, excess int, from Qdisc, env *Env, u units, st *Stats) {
	if excess <= 0 || r.Front() == nil {
		return
	}
	if !c.held {
		dropFront(now, r, excess, from, env, u, st, ReasonLimit)
		return
	}
	keep := c.isolateHeld(r, env)
	dropFront(now, r, excess, from, env, u, st, ReasonLimit)
	r.PushFront(keep)
}

// Action is what changing a chain did at one position.
type Action uint8

// Actions, as tc commands would perform them.
const (
	// Changed: the same kind stayed at the position and took the new
	// configuration in place (tc qdisc change), keeping its packets.
	Changed Action = iota
	// Replaced: another kind took the position (tc qdisc replace); the
	// packets of the old discipline and of everything below it were lost.
	Replaced
	// Added: the new chain is longer (tc qdisc add).
	Added
	// Removed: the new chain is shorter (tc qdisc del); the discipline's
	// packets were lost.
	Removed
)

var actionNames = [...]string{Changed: "changed", Replaced: "replaced", Added: "added", Removed: "removed"}

// String returns the action's name.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	for i, n := range actionNames {
		if n == string(b) {
			*a = Action(i)
			return nil
		}
	}
	return fmt.Errorf("unknown chain change action %q", b)
}

// PositionChange is what changing a chain did at one position.
type PositionChange struct {
	// Position counts from 0, the root.
	Position int `json:"position"`
	// Action is what happened there.
	Action Action `json:"action"`
	// OldKind and NewKind name the disciplines before and after ("" where
	// there was or is none).
	OldKind string `json:"old_kind"`
	NewKind string `json:"new_kind"`
	// Dropped counts the packets the discipline dropped in changing, to
	// respect a lower limit (codel, fq_codel, pie).
	Dropped int `json:"dropped"`
	// Flushed counts the packets lost because the discipline that held
	// them at this position (or a default child it replaced, such as
	// tbf's bfifo) was replaced or removed. They are reported to the
	// Observer as drops with ReasonFlushed.
	Flushed int `json:"flushed"`
}

// ChainChange is the report of a chain change, one entry per position of
// the longer of the old and the new chain.
type ChainChange []PositionChange

// String describes the change in one line per position, e.g.
// "1 netem: changed" and "2 tbf -> fq_codel: replaced, 12 packets
// flushed"; positions count from 1, as tc users number a chain.
func (c ChainChange) String() string {
	var b strings.Builder
	for i, p := range c {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d ", p.Position+1)
		switch p.Action {
		case Changed, Removed:
			b.WriteString(p.OldKind)
		case Added:
			b.WriteString(p.NewKind)
		default:
			b.WriteString(p.OldKind + " -> " + p.NewKind)
		}
		b.WriteString(": " + p.Action.String())
		if p.Dropped > 0 {
			fmt.Fprintf(&b, ", %d %s dropped to the new limit", p.Dropped, plural(p.Dropped, "packet"))
		}
		if p.Flushed > 0 {
			fmt.Fprintf(&b, ", %d %s flushed", p.Flushed, plural(p.Flushed, "packet"))
		}
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Positions returns the disciplines of the chain that root heads, root
// first: each one's child down to the last, leaving out a default child
// that is no position of its own (tbf's bfifo). A nil root has none.
func Positions(root Qdisc) []Qdisc {
	var qs []Qdisc
	for q := root; q != nil; q = q.Child() {
		qs = append(qs, q)
		if t, ok := q.(*TBF); ok && t.dflt {
			break
		}
		if r, ok := q.(*RED); ok && r.dflt {
			break
		}
	}
	return qs
}

// commonPrefix is the number of leading positions where the old chain and
// the new specs have the same kind.
func commonPrefix(olds []Qdisc, specs []Spec) int {
	k := 0
	for k < len(olds) && k < len(specs) && specs[k] != nil && olds[k].Kind() == specs[k].Kind() {
		k++
	}
	return k
}

// changeChecker is implemented by disciplines that refuse some changes a
// fresh instance would accept (fq_codel's flows).
type changeChecker interface {
	checkChange(spec Spec) error
}

// CheckChain reports whether ChangeChain(now, root, specs, env) would
// succeed, without changing anything: every spec must build (as Build
// would build the new chain on env's device), and every discipline that
// stays must accept its new configuration.
func CheckChain(root Qdisc, specs []Spec, env *Env) error {
	if len(specs) > 0 {
		scratch := Env{}
		if env != nil {
			scratch = *env
		}
		scratch.Observer, scratch.Root = nil, nil
		if _, err := build(specs, &scratch, scratch.Seed, 0); err != nil {
			return err
		}
	}
	olds := Positions(root)
	for i := range commonPrefix(olds, specs) {
		if c, ok := olds[i].(changeChecker); ok {
			if err := c.checkChange(specs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// ChangeChain turns the tree that root heads (nil for none) into the chain
// specs (empty for none), position by position, as a series of tc
// commands would: where the kind at a position stays, that discipline is
// changed in place (its Change, tc qdisc change) and keeps its packets;
// from the first position where the kind differs, or where one chain is
// longer, the old sub-tree is replaced (tc qdisc replace, del and add):
// its packets are flushed (reported to env's Observer as drops with
// ReasonFlushed) and the new disciplines are built and grafted under the
// last one kept, which keeps its own packets (netem's delayed packets go
// to the new child when due). A tbf that loses its child gets the default
// bfifo back; one that gains a child loses the default bfifo's packets.
//
// Everything is checked first (CheckChain); on an error nothing has
// changed. ChangeChain returns the new root (nil for an empty chain),
// which it also sets as env.Root, and a report per position. env must be
// the Env the tree was built with. New disciplines at position k draw
// from PositionSeed(env.Seed, k), as Build's.
func ChangeChain(now clock.Time, root Qdisc, specs []Spec, env *Env) (Qdisc, ChainChange, error) {
	if env == nil {
		return nil, nil, fmt.Errorf("nil Env")
	}
	if err := CheckChain(root, specs, env); err != nil {
		return nil, nil, err
	}
	root, rep := changeChain(now, root, specs, env, env.Seed)
	env.Root = root
	return root, rep, nil
}

// changeChain is ChangeChain, checked, for a chain whose positions draw
// from seed (see build), without touching env.Root: the chain may be the
// one under a class of htb or prio, and Root the device's whole tree.
func changeChain(now clock.Time, root Qdisc, specs []Spec, env *Env, seed uint64) (Qdisc, ChainChange) {
	olds := Positions(root)
	k := commonPrefix(olds, specs)
	n := max(len(olds), len(specs))
	rep := make(ChainChange, n)
	for i := range rep {
		p := &rep[i]
		p.Position = i
		if i < len(olds) {
			p.OldKind = olds[i].Kind()
		}
		if i < len(specs) {
			p.NewKind = specs[i].Kind()
		}
		switch {
		case i < k:
			p.Action = Changed
		case i < len(olds) && i < len(specs):
			p.Action = Replaced
		case i < len(olds):
			p.Action = Removed
		default:
			p.Action = Added
		}
	}
	// What each old position that goes holds itself, before it goes.
	for i := k; i < len(olds); i++ {
		rep[i].Flushed = olds[i].Len()
		if i+1 < len(olds) {
			rep[i].Flushed -= olds[i+1].Len()
		}
	}
	change := func(i int) {
		before := olds[i].Len()
		if err := olds[i].Change(now, specs[i]); err != nil {
			// CheckChain built this configuration and ran the checks
			// Change makes; a discipline that still refuses it breaks
			// Change's contract.
			panic(fmt.Sprintf("qdisc: %s refused a change CheckChain accepted: %v", olds[i].Kind(), err))
		}
		rep[i].Dropped = before - olds[i].Len()
	}
	for i := 0; i < k-1; i++ {
		change(i)
	}
	if k == len(olds) && k == len(specs) {
		if k > 0 {
			change(k - 1)
		}
		return root, rep
	}

	var sub Qdisc
	if k < len(specs) {
		var err error
		if sub, err = build(specs[k:], env, seed, k); err != nil {
			panic(fmt.Sprintf("qdisc: a chain CheckChain accepted does not build: %v", err))
		}
	}
	if k == 0 {
		if root != nil {
			root.Flush(now)
		}
		return sub, rep
	}
	parent := olds[k-1]
	// A tbf that gains a child takes it before its new configuration
	// (which may then leave out the limit); one that loses its child takes
	// the configuration first, whose limit sizes the default bfifo.
	if sub == nil {
		change(k - 1)
	}
	if old := graftInto(parent, sub); old != nil {
		if k == len(olds) {
			// A default child, which no position owned: its packets
			// count against the position that replaced it.
			rep[k].Flushed += old.Len()
		}
		old.Flush(now)
	}
	if sub != nil {
		change(k - 1)
	}
	return root, rep
}

// graftInto attaches child (nil for none, or tbf's default) under parent,
// a classful discipline, and returns the child it had.
func graftInto(parent, child Qdisc) Qdisc {
	switch p := parent.(type) {
	case *Netem:
		return p.graft(child)
	case *TBF:
		old, err := p.graft(child)
		if err != nil {
			panic(fmt.Sprintf("qdisc: tbf refused a child CheckChain accepted: %v", err))
		}
		return old
	}
	panic(fmt.Sprintf("qdisc: %s takes no child", parent.Kind()))
}
