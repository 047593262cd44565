package qdisc

import (
	"fmt"

	"wanlab/clock"
)

// subtree is the chain of disciplines under one class of a classful
// qdisc (a leaf class of htb, a band of prio): the chain its specs
// describe, or, with none, the kernel's default leaf, a pfifo of
// txqueuelen packets (qdisc_create_dflt of pfifo_qdisc_ops, as htb and
// prio make one).
type subtree struct {
	childQdisc
	dflt bool   // the default pfifo
	seed uint64 // the seed the chain's positions draw from (build)
}

// subtreeSeed is the seed the chain under class id of a discipline whose
// own seed is seed draws from: its position k draws from
// PositionSeed(subtreeSeed(seed, id), k), a stream of its own.
func subtreeSeed(seed uint64, id ClassID) uint64 { return DeriveSeed(seed, uint64(id)) }

// newSubtree builds specs (none: the default pfifo) as the chain under a
// class, whose units are u.
func newSubtree(specs []Spec, env *Env, seed uint64, u units) (subtree, error) {
	t := subtree{seed: seed}
	q, err := t.make(specs, env)
	if err != nil {
		return t, err
	}
	t.childQdisc, t.dflt = childOf(q, u), len(specs) == 0
	return t, nil
}

// make builds specs, or the default pfifo.
func (t *subtree) make(specs []Spec, env *Env) (Qdisc, error) {
	if len(specs) == 0 {
		return NewFifo(FifoConfig{Variant: "pfifo"}, env)
	}
	return build(specs, env, t.seed, 0)
}

// check reports whether change(specs) would succeed.
func (t *subtree) check(specs []Spec, env *Env) error {
	if len(specs) > 0 && !t.dflt {
		return CheckChain(t.Qdisc, specs, env)
	}
	scratch := *env
	scratch.Observer, scratch.Root = nil, nil
	_, err := t.make(specs, &scratch)
	return err
}

// change turns the chain into specs, checked, as tc commands would: a
// chain where the default pfifo was replaces it (tc qdisc add grafts the
// new qdisc and destroys the old one with its packets), none where a
// chain was brings the default back (tc qdisc del, likewise), and a chain
// where a chain was changes position by position (changeChain).
func (t *subtree) change(now clock.Time, specs []Spec, env *Env, u units) {
	switch {
	case len(specs) > 0 && !t.dflt:
		root, _ := changeChain(now, t.Qdisc, specs, env, t.seed)
		t.childQdisc = childOf(root, u)
	case len(specs) == 0 && t.dflt:
	default:
		q, err := t.make(specs, env)
		if err != nil {
			panic(fmt.Sprintf("qdisc: a leaf chain that checked does not build: %v", err))
		}
		t.Flush(now)
		t.childQdisc, t.dflt = childOf(q, u), len(specs) == 0
	}
}

// config returns the chain's configurations, root first, or nil for the
// default pfifo.
func (t *subtree) config() []Spec {
	if t.dflt {
		return nil
	}
	var specs []Spec
	for _, q := range Positions(t.Qdisc) {
		specs = append(specs, q.Config())
	}
	return specs
}
