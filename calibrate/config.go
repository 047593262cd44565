package calibrate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"wanlab/fidelity"
	"wanlab/lab"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// Test names a calibration test.
type Test string

// The tests.
const (
	TCP Test = "tcp"
	UDP Test = "udp"
)

// Config describes a calibration.
type Config struct {
	// Chain is the client-to-server path in tc syntax, root first, each
	// next qdisc the child of the one before ("tbf rate 10mbit burst 32k
	// latency 50ms; fq_codel"). It must be what the kernel's tc takes:
	// wanlab's own extensions ("correlation kernel", ...) are refused.
	Chain string
	// Script, instead of Chain, is a script of tc lines on one device
	// (any name) that makes a tree of classes (htb, prio): the kernel
	// side runs its lines on the hop's device, wanlab builds the tree
	// they make (tcspec.ParseScript); Vars are its variables' values.
	// Its test is Tree.
	Script string
	Vars   map[string]string
	// Tests to run, in order; empty means TCP then UDP.
	Tests []Test
	// Duration of each test; 0 means 10 s.
	Duration time.Duration
	// Warmup is left out of the goodput and delay figures (TCP's slow
	// start); 0 means 2 s. Drops count over the whole run.
	Warmup time.Duration
	// Runs is how many times each test runs on each engine, alternating
	// kernel and wanlab; 0 means 1.
	Runs int
	// CC is the TCP flows' congestion control; "" means cubic.
	CC string
	// Flows is the number of parallel TCP flows of the tcp test; 0 means
	// 1.
	Flows int
	// UDPRate is the flood's rate in bit/s of UDP payload; 0 means 120 %
	// of the chain's smallest rate, or 20 Mbit/s without one.
	UDPRate int64
	// Name is the prefix of the namespaces' names (wl-NAME-...); "" means
	// "cal".
	Name string
	// DataPlane is the wanlab side's data plane (lab.DataPlane): its
	// router reads TUN devices (the zero value) or packet sockets on veth
	// pairs.
	DataPlane lab.DataPlane
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if len(c.Tests) == 0 {
		c.Tests = []Test{TCP, UDP}
		if c.Script != "" {
			c.Tests = []Test{Tree}
		}
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 2 * time.Second
	}
	if c.Runs == 0 {
		c.Runs = 1
	}
	if c.CC == "" {
		c.CC = "cubic"
	}
	if c.Flows == 0 {
		c.Flows = 1
	}
	if c.Name == "" {
		c.Name = "cal"
	}
	return c
}

// Check refuses a configuration that cannot run, saying what to change.
// It returns the chain's parsed disciplines.
func (c Config) Check() ([]qdisc.Spec, error) {
	c = c.withDefaults()
	for _, t := range c.Tests {
		switch {
		case c.Script != "" && t != Tree:
			return nil, fmt.Errorf("calibrate: a script's tree is compared class by class with the tree test, not %s: drop --tests, or give --tests tree", t)
		case c.Script == "" && t == Tree:
			return nil, fmt.Errorf("calibrate: the tree test floods the classes of a script's tree: give --script FILE")
		case t != TCP && t != UDP && t != Tree:
			return nil, fmt.Errorf("calibrate: test %q is unknown: use tcp or udp, or tree with --script", t)
		}
	}
	if c.Warmup >= c.Duration {
		return nil, fmt.Errorf("calibrate: the warm-up (%v) leaves nothing of the %v run to measure: give a longer duration", c.Warmup, c.Duration)
	}
	if c.Runs < 1 || c.Flows < 1 || c.UDPRate < 0 {
		return nil, fmt.Errorf("calibrate: %d runs, %d TCP flows, a flood of %d bit/s: give at least one run and one flow, and a positive rate", c.Runs, c.Flows, c.UDPRate)
	}
	if c.Script != "" {
		if strings.TrimSpace(c.Chain) != "" {
			return nil, fmt.Errorf("calibrate: a chain and a script both give the path: give one")
		}
		specs, _, err := scriptChain(c)
		if err != nil {
			return nil, err
		}
		if err := extensions(strings.Split(c.Script, "\n")); err != nil {
			return nil, err
		}
		if _, err := treeFlows(specs, c.UDPRate); err != nil {
			return nil, err
		}
		return specs, nil
	}
	if strings.TrimSpace(c.Chain) == "" {
		return nil, fmt.Errorf("calibrate: no chain given: give the qdiscs to compare, e.g. \"tbf rate 10mbit burst 32k latency 50ms\"")
	}
	specs, err := tcspec.ParseChain(c.Chain, tcspec.Options{LoadDist: builtinDists})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if err := extensions(Elements(c.Chain)); err != nil {
		return nil, err
	}
	return specs, nil
}

// extensions refuses wanlab's own words in lines meant for the kernel's
// tc.
func extensions(lines []string) error {
	for _, e := range lines {
		for _, w := range strings.Fields(e) {
			switch w {
			case "correlation", "fifo_jitter", "oldgap", "invsqrt", "mem_overhead":
				return fmt.Errorf("calibrate: %q is wanlab's own word, which the kernel's tc does not take: leave it out to compare with the kernel", w)
			}
		}
	}
	return nil
}

// isKind says whether w names a qdisc kind wanlab emulates, which starts
// an element's options.
func isKind(w string) bool { return slices.Contains(qdisc.Kinds(), w) }

// Elements splits a chain into its qdiscs' texts, as tcspec.ParseChain
// reads it (";" or newlines between qdiscs, "#" comments, a backslash
// continuing a line), each from its kind on: what a pasted "tc qdisc add
// dev DEV root ..." has before the kind is left out.
func Elements(chain string) []string {
	chain = strings.ReplaceAll(chain, "\\\n", " ")
	var out []string
	for _, line := range strings.Split(chain, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, part := range strings.Split(line, ";") {
			f := strings.Fields(part)
			for i, w := range f {
				if isKind(w) {
					f = f[i:]
					break
				}
			}
			if len(f) > 0 {
				out = append(out, strings.Join(f, " "))
			}
		}
	}
	return out
}

// floodRate is the UDP flood's rate for a chain: 120 % of the smallest
// rate of its tbf and netem disciplines, in bit/s of UDP payload, or
// 20 Mbit/s.
func floodRate(specs []qdisc.Spec) int64 {
	smallest := fidelity.BottleneckRate(specs)
	if smallest == 0 {
		return 20e6
	}
	return int64(smallest.BitsPerSecond()) * 12 / 10
}
