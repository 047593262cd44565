package qdisc

import (
	"fmt"
	"maps"
	"slices"
)

// kind is one row of the registry: what wanlab knows of one tc kind.
type kind struct {
	// build makes the discipline from its configuration. child is the
	// discipline below it in the chain (nil for the last; only a classful
	// kind receives one); seed is the discipline's own, derived from
	// Env.Seed and its position.
	build func(spec Spec, env *Env, child Qdisc, seed uint64) (Qdisc, error)
	// classful kinds take a child qdisc in the chain.
	classful bool
	// classes says the kind takes its children through its classes
	// (htb's leaf classes, prio's bands), not in the chain.
	classes bool
	// warnings, when not nil, says what of a valid configuration behaves
	// differently from what its numbers suggest.
	warnings func(spec Spec, env *Env) []string
}

// kinds is the registry of disciplines: adding one is adding a row (and
// one in tcspec's table, which a test checks against this one).
var kinds = map[string]kind{
	"netem": {classful: true,
		build: buildAs(func(c NetemConfig, env *Env, child Qdisc, seed uint64) (Qdisc, error) {
			return qdiscOf(newNetem(c, env, child, seed))
		}),
		warnings: warnAs(netemWarnings)},
	"tbf": {classful: true,
		build: buildAs(func(c TBFConfig, env *Env, child Qdisc, _ uint64) (Qdisc, error) {
			return qdiscOf(NewTBF(c, env, child))
		}),
		warnings: warnAs(tbfWarnings)},
	"red": {classful: true,
		build: buildAs(func(c REDConfig, env *Env, child Qdisc, seed uint64) (Qdisc, error) {
			return qdiscOf(newRED(c, env, child, seed))
		}),
		warnings: warnAs(redWarnings)},
	"pfifo":           {build: buildAs(newFifoQdisc)},
	"bfifo":           {build: buildAs(newFifoQdisc)},
	"pfifo_head_drop": {build: buildAs(newFifoQdisc)},
	"pfifo_fast": {build: buildAs(func(c PfifoFastConfig, env *Env, _ Qdisc, _ uint64) (Qdisc, error) {
		return qdiscOf(NewPfifoFast(c, env))
	})},
	"codel": {build: buildAs(func(c CoDelConfig, env *Env, _ Qdisc, _ uint64) (Qdisc, error) {
		return qdiscOf(NewCoDel(c, env))
	})},
	"fq_codel": {build: buildAs(func(c FQCoDelConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
		return qdiscOf(newFQCoDel(c, env, seed))
	})},
	"pie": {build: buildAs(func(c PIEConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
		return qdiscOf(newPIE(c, env, seed))
	})},
	"sfq": {build: buildAs(func(c SFQConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
		return qdiscOf(newSFQ(c, env, seed))
	}), warnings: warnAs(sfqWarnings)},
	"dualpi2": {build: buildAs(func(c DualPI2Config, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
		return qdiscOf(newDualPI2(c, env, seed))
	})},
	"cake": {build: buildAs(func(c CakeConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
		return qdiscOf(newCake(c, env, seed))
	}), warnings: warnAs(cakeWarnings)},
	"fq_pie": {build: buildAs(func(c FQPIEConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
		return qdiscOf(newFQPIE(c, env, seed))
	})},
}

// The kinds with classes build the chains under their classes through
// build, which reads kinds: their rows join the table when the package
// starts, which Go's initialisation order needs.
func init() {
	kinds["htb"] = kind{classes: true,
		build: buildAs(func(c HTBConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
			return qdiscOf(newHTB(c, env, seed))
		}),
		warnings: warnAs(htbWarnings)}
	kinds["prio"] = kind{classes: true,
		build: buildAs(func(c PrioConfig, env *Env, _ Qdisc, seed uint64) (Qdisc, error) {
			return qdiscOf(newPrio(c, env, seed))
		}),
		warnings: warnAs(prioWarnings)}
}

func newFifoQdisc(c FifoConfig, env *Env, _ Qdisc, _ uint64) (Qdisc, error) {
	return qdiscOf(NewFifo(c, env))
}

// buildAs adapts a constructor of configuration type C to the registry,
// refusing a Spec of another type (a pointer, say) with an error rather
// than a panic.
func buildAs[C Spec](f func(C, *Env, Qdisc, uint64) (Qdisc, error)) func(Spec, *Env, Qdisc, uint64) (Qdisc, error) {
	return func(s Spec, env *Env, child Qdisc, seed uint64) (Qdisc, error) {
		c, ok := s.(C)
		if !ok {
			return nil, fmt.Errorf("%s: the configuration is a %T; give a %T value", s.Kind(), s, c)
		}
		return f(c, env, child, seed)
	}
}

// warnAs adapts a warning function of configuration type C.
func warnAs[C Spec](f func(C, *Env) []string) func(Spec, *Env) []string {
	return func(s Spec, env *Env) []string {
		if c, ok := s.(C); ok {
			return f(c, env)
		}
		return nil
	}
}

// qdiscOf returns a constructor's result as a Qdisc, nil (not a typed nil)
// on an error.
func qdiscOf[Q Qdisc](q Q, err error) (Qdisc, error) {
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Kinds returns the kinds of discipline that Build knows, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(kinds)) }

// Warnings returns what of spec, a valid configuration on env's device,
// behaves very differently from what its numbers suggest: the kernel's own
// configuration warnings (tbf: a burst below the MTU drops full-size
// packets) and wanlab's (netem: correlations the kernel's RNG does not
// realise, jitter that reorders). The messages do not name the discipline;
// the caller says where they apply. It returns nil for a kind without
// warnings, and does not validate spec: Build does.
func Warnings(spec Spec, env *Env) []string {
	if spec == nil {
		return nil
	}
	if k, ok := kinds[spec.Kind()]; ok && k.warnings != nil {
		return k.warnings(spec, env)
	}
	return nil
}

// Build makes a tree of disciplines from a chain: specs[0] is the root and
// each next spec is the child of the one before, as
// "tc qdisc add ... root handle 1: netem ...; tc qdisc add ... parent 1:1 tbf ..."
// would attach them. It sets env.Root to the root, so that netem's
// duplicates re-enter the whole tree. The discipline at position k (the
// root is 0) draws its randomness from PositionSeed(env.Seed, k). An empty
// chain is an error: a direct connection has no qdisc tree at all, and the
// caller should say so.
func Build(specs []Spec, env *Env) (Qdisc, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("empty chain: give at least one qdisc")
	}
	if env == nil {
		return nil, fmt.Errorf("nil Env")
	}
	root, err := build(specs, env, env.Seed, 0)
	if err != nil {
		return nil, err
	}
	env.Root = root
	return root, nil
}

// build makes the tree of specs as positions first, first+1, ... of a
// chain whose positions draw from seed (the discipline at position k from
// PositionSeed(seed, k)), without touching env.Root. A device's chain
// draws from Env.Seed; the chain under a class of htb or prio from a seed
// of its own (subtreeSeed).
func build(specs []Spec, env *Env, seed uint64, first int) (Qdisc, error) {
	for i, s := range specs {
		if s == nil {
			return nil, fmt.Errorf("qdisc %d of the chain is missing", first+i+1)
		}
	}
	for i, s := range specs[:len(specs)-1] {
		c, ok := kinds[s.Kind()]
		switch {
		case ok && c.classes:
			return nil, fmt.Errorf("%s takes its child qdiscs under its classes, not after it in the chain (%s follows it); put %s in the leaf chain of one of its classes", s.Kind(), specs[i+1].Kind(), specs[i+1].Kind())
		case ok && !c.classful:
			return nil, fmt.Errorf("%s cannot have a child qdisc (%s follows it in the chain); put %s last, or use netem or tbf as the parent", s.Kind(), specs[i+1].Kind(), s.Kind())
		}
	}
	var child Qdisc
	for i := len(specs) - 1; i >= 0; i-- {
		c, ok := kinds[specs[i].Kind()]
		if !ok {
			return nil, fmt.Errorf("unknown qdisc %q", specs[i].Kind())
		}
		q, err := c.build(specs[i], env, child, PositionSeed(seed, first+i))
		if err != nil {
			return nil, err
		}
		child = q
	}
	return child, nil
}
