package qdisc

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// classifier is the filters attached at one point (a qdisc, or one of
// htb's classes), laid out for the packet path: in the order they run
// (increasing prio; the order given within one prio), their keys in one
// array. Classifying a packet reads its bytes and allocates nothing.
type classifier struct {
	rules []rule
	keys  []U32Key
}

// rule is one filter of a classifier; its keys are keys[first:end].
type rule struct {
	prio       uint16
	proto      FilterProtocol
	first, end int32
	class      ClassID
}

// newClassifier lays out fs, the filters of one attachment point in the
// order they were added, checked.
func newClassifier(fs []*Filter) classifier {
	var c classifier
	for _, f := range fs {
		c.rules = append(c.rules, rule{prio: f.Prio, proto: f.Protocol, first: int32(len(c.keys)), class: f.ClassID})
		c.keys = append(c.keys, f.Keys...)
		c.rules[len(c.rules)-1].end = int32(len(c.keys))
	}
	slices.SortStableFunc(c.rules, func(a, b rule) int { return cmp.Compare(a.prio, b.prio) })
	return c
}

// classify returns the class of the first filter that the IP packet b
// matches, as tcf_classify runs a chain of u32 classifiers (cls_u32.c's
// u32_classify): a filter of another protocol is skipped; a filter whose
// keys all match decides; one that reads a word beyond the packet ends
// its whole prio (u32_classify gives up on its tcf_proto), and the next
// prio goes on.
func (c *classifier) classify(b []byte) (ClassID, bool) {
	proto := protocolOf(b)
	rules := c.rules
	for i := 0; i < len(rules); i++ {
		r := &rules[i]
		if r.proto != ProtocolAll && r.proto != proto {
			continue
		}
		switch c.match(r, b) {
		case matched:
			return r.class, true
		case short:
			for i+1 < len(rules) && rules[i+1].prio == r.prio {
				i++
			}
		}
	}
	return 0, false
}

// A rule's outcome on a packet.
const (
	missed = iota
	matched
	short // a key reads beyond the packet
)

func (c *classifier) match(r *rule, b []byte) int {
	for _, k := range c.keys[r.first:r.end] {
		off := int(k.Off)
		if off+4 > len(b) {
			return short
		}
		if (binary.BigEndian.Uint32(b[off:])^k.Val)&k.Mask != 0 {
			return missed
		}
	}
	return matched
}

// empty reports whether the classifier has no filter.
func (c *classifier) empty() bool { return len(c.rules) == 0 }
