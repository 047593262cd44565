package tcspec

import (
	"fmt"
	"slices"
	"strings"

	"wanlab/qdisc"
)

// This file reads and prints the qdisc lines of the classful disciplines,
// htb and prio: their own options. Their classes, the qdiscs under them
// and their filters come from "tc class" and "tc filter" lines.

const htbTakes = "default MINOR (hex), r2q N, direct_qlen N"

// parseHTB follows htb_parse_opt: r2q, default, debug, direct_qlen and
// offload, each by prefix, in that order. The default class is read in
// hex, as tc reads it ("default 20" is class 1:20). debug, which the
// kernel ignores, is accepted and dropped.
func parseHTB(a *args, _ Options) (qdisc.Spec, error) {
	c := qdisc.HTBConfig{R2Q: 10}
	for a.more() {
		w := a.take()
		switch {
		case matches(w, "r2q"):
			n, err := a.uint(w, "N", 10, 1<<32-1)
			if err != nil {
				return nil, err
			}
			// The kernel takes r2q 0 as 1 (htb_init).
			c.R2Q = int(max(n, 1))
		case matches(w, "default"):
			n, err := a.uint(w, "MINOR", 16, 1<<32-1)
			if err != nil {
				return nil, err
			}
			// The kernel makes the class MAJ:MIN of the minor alone.
			c.Default = uint16(n)
		case matches(w, "debug"):
			if _, err := a.value(w, "DIGITS"); err != nil {
				return nil, err
			}
		case matches(w, "direct_qlen"):
			n, err := a.uint(w, "N", 10, 1<<32-1)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				v := a.words[a.i-1]
				return nil, a.fail(v, "%q drops every unclassified packet, and wanlab reads a zero direct_qlen as the default (the device's txqueuelen): give at least 1, or none for the default", w+" "+v)
			}
			c.DirectQLen = int(n)
		case matches(w, "offload"):
			return nil, a.fail(w, "%q hands htb to the network card; wanlab runs htb itself: leave it out", w)
		default:
			return nil, a.unknown(w, htbTakes)
		}
	}
	return c, nil
}

// formatHTB prints the qdisc's own options; its classes and filters are
// tc class and tc filter lines of their own.
func formatHTB(c qdisc.HTBConfig) string {
	b := words{w: []string{"htb"}}
	if c.Default != 0 {
		b.add("default", fmt.Sprintf("%x", c.Default))
	}
	if c.R2Q != 0 && c.R2Q != 10 {
		b.count("r2q", c.R2Q)
	}
	b.count("direct_qlen", c.DirectQLen)
	return b.String()
}

const prioTakes = "bands N, priomap P1 P2 ... (up to 16 bands)"

// parsePrio follows prio_parse_opt: "bands" and "priomap" as whole words,
// then priomap's bands, each below the bands given so far, up to 16;
// entries left out keep tc's default. tc's default is 3 bands and the
// priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1.
func parsePrio(a *args, _ Options) (qdisc.Spec, error) {
	c := qdisc.PrioConfig{Bands: 3}
	var m [16]uint8
	copy(m[:], qdisc.DefaultPriomap())
	inMap, idx := false, 0
	for a.more() {
		w := a.take()
		switch {
		case w == "bands":
			v, err := a.value(w, "N")
			if err != nil {
				return nil, err
			}
			n, err := getInt(v, 10, -1<<31, 1<<31-1)
			if err != nil {
				return nil, a.bad(w, v, err)
			}
			if n < 2 || n > 16 {
				return nil, a.fail(v, "%q: prio takes 2 to 16 bands", w+" "+v)
			}
			c.Bands = int(n)
		case w == "priomap":
			if inMap {
				return nil, a.fail(w, "priomap given twice: give it once")
			}
			inMap = true
		case w == "multiqueue":
			return nil, a.fail(w, "%q spreads the bands over a card's queues; wanlab's device has one queue: leave it out", w)
		case inMap:
			n, err := getUint(w, 10, 1<<32-1)
			if err != nil {
				return nil, a.fail(w, "priomap element %q: %v", w, err)
			}
			if int(n) >= c.Bands {
				return nil, a.fail(w, "priomap element %s is out of the %d bands (0 to %d)", w, c.Bands, c.Bands-1)
			}
			if idx > 15 {
				return nil, a.fail(w, "priomap has more than 16 elements, one per priority 0 to 15")
			}
			m[idx] = uint8(n)
			idx++
		default:
			return nil, a.unknown(w, prioTakes)
		}
	}
	c.Priomap = m[:]
	return c, nil
}

// formatPrio prints the qdisc's own options: bands and the priomap where
// they are not tc's defaults. Its bands' qdiscs are lines of their own.
func formatPrio(c qdisc.PrioConfig) string {
	b := words{w: []string{"prio"}}
	if c.Bands != 0 && c.Bands != 3 {
		b.count("bands", c.Bands)
	}
	if c.Priomap != nil && !slices.Equal(c.Priomap, qdisc.DefaultPriomap()) {
		b.add("priomap", strings.Trim(fmt.Sprint(c.Priomap), "[]"))
	}
	return b.String()
}
