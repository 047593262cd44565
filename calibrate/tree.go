package calibrate

import (
	"fmt"
	"math"
	"strings"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// Tree is the test of a script's tree of classes: a UDP flood per leaf
// class that a DSCP reaches through the tree's filters, each at 120 % of
// the smallest ceil on its way to the root, all at once, so that every
// class is saturated and the excess is shared as the tree shares it. It
// reports each class's goodput and drops.
const Tree Test = "tree"

// ClassFigures are one class's figures in the tree test.
type ClassFigures struct {
	// Class is the leaf class ("1:10"), TOS the TOS byte its flood
	// carries (the DSCP that reaches the class, shifted), RateBps the
	// flood's rate of UDP payload.
	Class   string `json:"class"`
	TOS     int    `json:"tos"`
	RateBps int64  `json:"rate_bps"`
	// GoodputBps is the flood's received rate of UDP payload over the
	// measured window, in bit/s; Drops the packets the class's leaf
	// dropped over the whole run, as tc -s class show counts them.
	GoodputBps float64 `json:"goodput_bps"`
	Drops      uint64  `json:"drops"`
}

// classFlow is a leaf class the tree test floods.
type classFlow struct {
	class qdisc.ClassID
	tos   uint8
	rate  int64 // bit/s of UDP payload
}

// scriptChain reads cfg's script: one device's tc lines, applied from
// nothing; it returns the chain they make and the script, whose lines the
// kernel side runs (scriptCommands).
func scriptChain(cfg Config) ([]qdisc.Spec, *tcspec.Script, error) {
	sc, err := tcspec.ParseScript(cfg.Script, tcspec.ScriptOptions{Options: tcspec.Options{LoadDist: builtinDists}, Vars: cfg.Vars})
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: the script: %w", err)
	}
	if _, err := sc.Device(); err != nil {
		return nil, nil, fmt.Errorf("calibrate: the script: %w", err)
	}
	specs, err := sc.Chain(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: the script: %w", err)
	}
	if !tcspec.HasTree(specs) {
		return nil, nil, fmt.Errorf("calibrate: the script makes no tree of classes (htb or prio): compare a chain with --chain")
	}
	return specs, sc, nil
}

// scriptCommands are the script's commands as tc's arguments on device
// dev.
func scriptCommands(sc *tcspec.Script, dev string) []tcCommand {
	args, quiet := sc.Lines(dev)
	cmds := make([]tcCommand, len(args))
	for i := range args {
		cmds[i] = tcCommand{args: args[i], quiet: quiet[i]}
	}
	return cmds
}

// treeFlows finds, for each leaf class of the tree specs make, the first
// DSCP that its filters send there (each DSCP's packet offered to a tree
// of its own, on the virtual clock), and the rate to flood it at: rate if
// not 0, else 120 % of the smallest ceil from the class to the root.
func treeFlows(specs []qdisc.Spec, rate int64) ([]classFlow, error) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	var flows []classFlow
	seen := map[qdisc.ClassID]bool{}
	for dscp := range 64 {
		env := &qdisc.Env{Pool: pool}
		root, err := qdisc.Build(specs, env)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		p := pool.Get()
		p.SetLen(1500)
		packet.WriteUDP4(p.Bytes(), packet.UDP4{Src: [4]byte{10, 77, 1, 1}, Dst: [4]byte{10, 77, 2, 1}, SrcPort: 5000, DstPort: 5001, TOS: uint8(dscp << 2)}, 1500)
		root.Enqueue(clock.Time(0), p)
		class, ceil := leafOf(root)
		root.Flush(clock.Time(0))
		if class == 0 || seen[class] {
			continue
		}
		seen[class] = true
		r := rate
		if r == 0 {
			r = int64(ceil.BitsPerSecond()) * 12 / 10
		}
		flows = append(flows, classFlow{class: class, tos: uint8(dscp << 2), rate: r})
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("calibrate: no DSCP reaches a leaf class of the tree: the tree test floods each class by the DSCP its filters match")
	}
	return flows, nil
}

// leafOf returns the leaf class of root (the root of a tree, or a chain
// above one) that holds a packet, and the smallest ceil on its way up.
func leafOf(root qdisc.Qdisc) (qdisc.ClassID, qdisc.Rate) {
	for _, q := range qdisc.Positions(root) {
		switch x := q.(type) {
		case *qdisc.HTB:
			infos := x.Classes()
			byID := map[qdisc.ClassID]qdisc.HTBClass{}
			for _, ci := range infos {
				byID[ci.Class.ID] = ci.Class
			}
			for _, ci := range infos {
				if ci.Level != 0 || ci.Stats.Qlen == 0 {
					continue
				}
				ceil := qdisc.Rate(math.MaxUint64)
				for c, ok := ci.Class, true; ok; c, ok = byID[c.Parent] {
					ceil = min(ceil, c.Ceil)
				}
				return ci.Class.ID, ceil
			}
		case *qdisc.Prio:
			for _, b := range x.Bands() {
				if b.Leaf.Len() > 0 {
					return b.Class, 0
				}
			}
		}
	}
	return 0, 0
}

// builtinDists refuses distribution files: the comparison uses tc's
// built-in ones.
func builtinDists(name string) ([]int16, error) {
	return nil, fmt.Errorf("distribution %q: calibrate compares tc's built-in distributions only (uniform, normal, pareto, paretonormal)", name)
}

// tcCommand is one tc command the kernel side runs: tc's arguments, and
// whether a failure is silenced (as the script silenced it).
type tcCommand struct {
	args  []string
	quiet bool
}

func (c tcCommand) String() string { return "tc " + strings.Join(c.args, " ") }
