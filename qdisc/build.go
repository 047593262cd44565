package qdisc

import "fmt"

// constructor builds one discipline from its Spec. child is the discipline
// below it in the chain (nil for the last); a discipline that takes no child
// is registered with classful false and never receives one. seed is the
// discipline's own seed, derived from Env.Seed and its position.
type constructor struct {
	build    func(spec Spec, env *Env, child Qdisc, seed uint64) (Qdisc, error)
	classful bool
}

// constructors maps tc kinds to their constructors. Each discipline's file
// registers itself, so that the list of kinds lives next to the code.
var constructors = map[string]constructor{}

func register(kind string, classful bool, build func(spec Spec, env *Env, child Qdisc, seed uint64) (Qdisc, error)) {
	constructors[kind] = constructor{build: build, classful: classful}
}

// Kinds returns the kinds of discipline that Build knows.
func Kinds() []string {
	ks := make([]string, 0, len(constructors))
	for k := range constructors {
		ks = append(ks, k)
	}
	return ks
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
		return nil, fmt.Errorf("qdisc: nil Env")
	}
	root, err := build(specs, env, 0)
	if err != nil {
		return nil, err
	}
	env.Root = root
	return root, nil
}

// build makes the tree of specs as positions first, first+1, ... of a
// chain, without touching env.Root.
func build(specs []Spec, env *Env, first int) (Qdisc, error) {
	for i, s := range specs {
		if s == nil {
			return nil, fmt.Errorf("qdisc %d of the chain is missing", first+i+1)
		}
	}
	for i, s := range specs[:len(specs)-1] {
		c, ok := constructors[s.Kind()]
		if ok && !c.classful {
			return nil, fmt.Errorf("%s cannot have a child qdisc (%s follows it in the chain); put %s last, or use netem or tbf as the parent", s.Kind(), specs[i+1].Kind(), s.Kind())
		}
	}
	var child Qdisc
	for i := len(specs) - 1; i >= 0; i-- {
		c, ok := constructors[specs[i].Kind()]
		if !ok {
			return nil, fmt.Errorf("unknown qdisc %q", specs[i].Kind())
		}
		q, err := c.build(specs[i], env, child, PositionSeed(env.Seed, first+i))
		if err != nil {
			return nil, err
		}
		child = q
	}
	return child, nil
}
