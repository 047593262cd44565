package qdisc

import (
	"fmt"
	"math"
	"time"
)

// HTBConfig is an htb tree (tc-htb(8)): the qdisc's options ("tc qdisc
// add ... handle 1: htb default 20"), its classes ("tc class add ...
// htb rate ..."), each with the chain of disciplines under it, and its
// filters ("tc filter add ... u32 ..."). It is one value, as a chain is.
type HTBConfig struct {
	// Handle is the qdisc's major ("handle 1:"), which its classes and
	// filters name; 0 means the kernel's first automatic handle, 8001:.
	Handle uint16
	// Default is the minor of the class unclassified packets go to
	// (tc's "default 20" is hexadecimal: 0x20, class 1:20); 0 or a class
	// that does not exist or has children sends them to the direct
	// queue.
	Default uint16
	// R2Q divides a class's rate into its DRR quantum; 0 means tc's 10.
	R2Q int
	// DirectQLen bounds the direct queue, in packets; 0 means the
	// device's txqueuelen, the kernel's default (an explicit
	// "direct_qlen 0", which drops every direct packet, cannot be
	// expressed).
	DirectQLen int
	// Classes are the classes in the order tc created them: a class's
	// parent is looked up among the classes before it.
	Classes []HTBClass
	// Filters are the filters on the qdisc (Parent 0 or Handle:) and on
	// its classes, in the order tc added them.
	Filters []Filter
}

// Kind returns "htb".
func (HTBConfig) Kind() string { return "htb" }

// HTBClass is one class of htb ("tc class add dev DEV parent 1:1 classid
// 1:10 htb rate 1mbit ceil 10mbit"), with tc's options as it takes them.
type HTBClass struct {
	// ID is the classid; its major is the qdisc's.
	ID ClassID
	// Parent is the parent class, or the qdisc (its handle, or 0) for a
	// root class. As in the kernel, a Parent that names no class created
	// before this one makes it a root class too (Warnings says so).
	Parent ClassID
	// Rate is the rate the class is guaranteed; it is required.
	Rate Rate
	// Ceil is the most the class may send, borrowing; 0 means Rate.
	Ceil Rate
	// Burst and CBurst are the bytes the class may send at once at Rate
	// and at Ceil; 0 means tc's default, rate/hz + MTU (see
	// HTBDefaultBurst).
	Burst, CBurst int
	// MTU is tc's "mtu", which only sizes the default bursts; 0 means
	// tc's 1600.
	MTU int
	// Prio is the class's priority among its siblings, 0 (first) to 7;
	// the kernel takes a larger one as 7.
	Prio int
	// Quantum is the class's DRR quantum in bytes; 0 means Rate/R2Q,
	// which the kernel keeps within 1000..200000.
	Quantum int
	// Overhead and MPU adjust each packet's length in the rate and ceil
	// arithmetic (psched_l2t_ns); Link is the link layer (atm: 53-byte
	// cells of 48).
	Overhead, MPU int
	Link          LinkLayer
	// Leaf is the chain of disciplines under a class without children
	// (Leaf[0] its qdisc, each next spec the child of the one before);
	// none means the kernel's default, a pfifo of txqueuelen packets. A
	// class with children has none.
	Leaf []Spec
}

// htb's limits and tc's defaults.
const (
	htbMaxDepth       = 8  // TC_HTB_MAXDEPTH: levels of classes
	htbNumPrio        = 8  // TC_HTB_NUMPRIO
	htbDefaultR2Q     = 10 // q_htb.c
	htbDefaultMTU     = 1600
	htbMinQuantum     = 1000   // htb_change_class raises a computed quantum to it
	htbMaxQuantum     = 200000 // and lowers one to it
	htbAutoHandle     = 0x8001 // the first handle qdisc_alloc_handle gives
	htbMaxBufferTicks = math.MaxUint32
)

// pschedHz is what tc's get_hz reads from /proc/net/psched on a kernel
// with high-resolution timers (every kernel wanlab runs on): 1e9, so that
// the default burst rate/hz + mtu is the mtu below 8 Gbit/s.
const pschedHz = 1e9

// HTBDefaultBurst returns tc's default burst (or cburst) at rate: rate/hz
// + mtu bytes (q_htb.c), hz being 1e9 (see pschedHz) and mtu tc's "mtu"
// (1600 when 0).
func HTBDefaultBurst(rate Rate, mtu int) int {
	if mtu == 0 {
		mtu = htbDefaultMTU
	}
	return int(uint64(rate)/pschedHz) + mtu
}

// HTBBuffer returns the credit in ns that tc hands htb for a burst of
// size bytes at rate: iproute2 6.1's tc_calc_xmittime, which takes the
// burst's time in whole µs (truncated), turns it into psched ticks of 64
// ns at 15.625 a µs (truncated), and the kernel's PSCHED_TICKS2NS. So a
// burst of 1600 bytes at 1gbit, 12.8 µs, is 12 µs, 187 ticks, 11968 ns.
// (iproute2 6.19 rounds up in floating point instead: 200 ticks.) ok is
// false when the ticks do not fit tc's 32 bits.
func HTBBuffer(rate Rate, size int) (d time.Duration, ok bool) {
	ticks, ok := tcXmitTicks(rate, size)
	if !ok || ticks >= htbMaxBufferTicks {
		return 0, false
	}
	return time.Duration(uint64(ticks) << 6), true
}

// withDefaults returns c with tc's defaults filled in: Ceil, Burst,
// CBurst and MTU. Quantum and Prio, which the kernel derives, are left.
func (c HTBClass) withDefaults() HTBClass {
	orDefault(&c.MTU, htbDefaultMTU)
	orDefault(&c.Ceil, c.Rate)
	if c.Burst == 0 {
		c.Burst = HTBDefaultBurst(c.Rate, c.MTU)
	}
	if c.CBurst == 0 {
		c.CBurst = HTBDefaultBurst(c.Ceil, c.MTU)
	}
	return c
}

// handle returns the qdisc's effective handle MAJ:0.
func (c *HTBConfig) handle() ClassID {
	if c.Handle == 0 {
		return handleOf(htbAutoHandle)
	}
	return handleOf(c.Handle)
}

// r2q returns the effective r2q.
func (c *HTBConfig) r2q() int {
	if c.R2Q == 0 {
		return htbDefaultR2Q
	}
	return c.R2Q
}

// htbQuantum returns the quantum the kernel gives a leaf class (as
// htb_change_class computes it) and, for a computed one it had to bound,
// "small" or "big", the word of its warning.
func htbQuantum(c *HTBClass, r2q int) (int, string) {
	if c.Quantum != 0 {
		return c.Quantum, ""
	}
	q := min(uint64(c.Rate)/uint64(r2q), math.MaxInt32)
	switch {
	case q < htbMinQuantum:
		return htbMinQuantum, "small"
	case q > htbMaxQuantum:
		return htbMaxQuantum, "big"
	}
	return int(q), ""
}

// htbTree is a checked HTBConfig's shape: each class's effective parent
// (-1 for a root class), depth and number of children, by index.
type htbTree struct {
	parent   []int
	depth    []int
	children []int
	index    map[ClassID]int
}

// checkHTB refuses what tc or the kernel refuses of c, with messages that
// name the class or filter and the fix, and returns the tree's shape.
func checkHTB(c *HTBConfig) (*htbTree, error) {
	const u32 = math.MaxUint32
	h := c.handle()
	switch {
	case c.R2Q < 0 || int64(c.R2Q) > u32:
		return nil, fmt.Errorf("htb: r2q %d out of range; give 1 to %d (tc's default is 10)", c.R2Q, uint32(u32))
	case c.DirectQLen < 0 || int64(c.DirectQLen) > u32:
		return nil, fmt.Errorf("htb: direct_qlen %d out of range; give a packet count up to %d", c.DirectQLen, uint32(u32))
	}
	t := &htbTree{index: make(map[ClassID]int, len(c.Classes))}
	for i := range c.Classes {
		cl := &c.Classes[i]
		if err := checkHTBClass(cl, h); err != nil {
			return nil, err
		}
		if _, dup := t.index[cl.ID]; dup {
			return nil, fmt.Errorf("htb: class %v is given twice (tc class add says \"File exists\"); keep one, or change it with tc class change", cl.ID)
		}
		p, ok := t.index[cl.Parent]
		if !ok {
			p = -1
		}
		depth := 0
		if p >= 0 {
			depth = t.depth[p] + 1
			if depth >= htbMaxDepth {
				return nil, fmt.Errorf("htb: class %v: the tree is too deep; htb takes %d levels of classes, and %v would be the %dth", cl.ID, htbMaxDepth, cl.ID, depth+1)
			}
			t.children[p]++
		}
		t.index[cl.ID] = i
		t.parent = append(t.parent, p)
		t.depth = append(t.depth, depth)
		t.children = append(t.children, 0)
	}
	for i := range c.Classes {
		if t.children[i] > 0 && len(c.Classes[i].Leaf) > 0 {
			return nil, fmt.Errorf("htb: class %v has child classes, so no qdisc of its own (the kernel's htb_graft refuses one); attach %s to one of its leaf classes", c.Classes[i].ID, c.Classes[i].Leaf[0].Kind())
		}
	}
	return t, checkFilters(c.Filters, h, "htb", func(id ClassID) bool { _, ok := t.index[id]; return ok })
}

// checkHTBClass checks one class's own options.
func checkHTBClass(cl *HTBClass, h ClassID) error {
	const u32 = math.MaxUint32
	name := cl.ID.String()
	switch {
	case cl.ID.Major() != h.Major():
		return fmt.Errorf("htb: class %s is outside the qdisc's major (%v): give it a classid %x:MINOR", name, h, h.Major())
	case cl.ID.Minor() == 0:
		return fmt.Errorf("htb: classid %s names the qdisc itself; give the class a minor, e.g. %x:1", name, h.Major())
	case cl.Parent != 0 && cl.Parent.Major() != h.Major():
		return fmt.Errorf("htb: class %s: parent %v is not of this qdisc (%v); give %v or one of its classes", name, cl.Parent, h, h)
	case cl.Rate == 0:
		return fmt.Errorf("htb: class %s: rate is required; give e.g. rate 1mbit", name)
	case cl.Burst < 0 || int64(cl.Burst) > u32, cl.CBurst < 0 || int64(cl.CBurst) > u32:
		return fmt.Errorf("htb: class %s: burst and cburst are 0 to %d bytes", name, uint32(u32))
	case cl.MTU < 0 || int64(cl.MTU) > u32:
		return fmt.Errorf("htb: class %s: mtu %d out of range; give 0 to %d bytes", name, cl.MTU, uint32(u32))
	case cl.Prio < 0 || int64(cl.Prio) > u32:
		return fmt.Errorf("htb: class %s: prio %d out of range; give 0 (first) to 7", name, cl.Prio)
	case cl.Quantum < 0 || cl.Quantum > math.MaxInt32:
		return fmt.Errorf("htb: class %s: quantum %d out of range; give 1 to %d bytes", name, cl.Quantum, math.MaxInt32)
	case cl.Overhead < 0 || cl.Overhead > math.MaxUint16:
		return fmt.Errorf("htb: class %s: overhead %d out of range; tc takes 0 to %d bytes", name, cl.Overhead, math.MaxUint16)
	case cl.MPU < 0 || cl.MPU > math.MaxUint16:
		return fmt.Errorf("htb: class %s: mpu %d out of range; give 0 to %d bytes", name, cl.MPU, math.MaxUint16)
	case cl.Link != LinkEthernet && cl.Link != LinkATM:
		return fmt.Errorf("htb: class %s: unknown link layer %d; use ethernet or atm", name, cl.Link)
	}
	d := cl.withDefaults()
	if _, ok := HTBBuffer(d.Rate, d.Burst); !ok {
		return fmt.Errorf("htb: class %s: burst %d bytes at rate %d bit/s is beyond tc's buffer (2^32 ticks of 64 ns, 274 s); lower the burst", name, d.Burst, d.Rate.BitsPerSecond())
	}
	if _, ok := HTBBuffer(d.Ceil, d.CBurst); !ok {
		return fmt.Errorf("htb: class %s: cburst %d bytes at ceil %d bit/s is beyond tc's buffer (2^32 ticks of 64 ns, 274 s); lower the cburst", name, d.CBurst, d.Ceil.BitsPerSecond())
	}
	return nil
}

// checkFilters refuses what tc or the kernel refuses of the filters of a
// qdisc of handle h: on a class that does not exist ("Specified class
// doesn't exist"), two protocols at one prio of one attachment point
// ("Protocol mismatch for filter with specified priority"), and what
// Filter.check refuses. isClass says whether a class of the qdisc may
// hold filters (nil: none may, as prio's).
func checkFilters(fs []Filter, h ClassID, kind string, isClass func(ClassID) bool) error {
	type at struct {
		parent ClassID
		prio   uint16
	}
	protos := map[at]FilterProtocol{}
	for i := range fs {
		f := &fs[i]
		name := fmt.Sprintf("%s: filter %d (prio %d, flowid %v)", kind, i+1, f.Prio, f.ClassID)
		if err := f.check(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p := f.Parent
		switch {
		case p == 0 || p == h:
			p = h
		case p.Major() != h.Major():
			return fmt.Errorf("%s: parent %v is not of this qdisc (%v); attach it to %v", name, f.Parent, h, h)
		case isClass == nil:
			return fmt.Errorf("%s: parent %v: %s's classes take no filters; attach it to %v", name, f.Parent, kind, h)
		case !isClass(p):
			return fmt.Errorf("%s: parent %v is no class of %s %v; attach it to %v or to one of its classes", name, f.Parent, kind, h, h)
		}
		k := at{p, f.Prio}
		if q, ok := protos[k]; ok && q != f.Protocol {
			return fmt.Errorf("%s: protocol %v, where the filters of prio %d on %v are protocol %v (the kernel refuses two protocols at one prio); give it another prio", name, f.Protocol, f.Prio, p, q)
		}
		protos[k] = f.Protocol
	}
	return nil
}

// htbWarnings returns what of a valid configuration behaves differently
// from what its numbers suggest: the kernel's own quantum warnings, and
// what the kernel accepts silently (a parent that does not exist, a ceil
// below the rate, a prio above 7, a default class that cannot take
// packets, filters that never run, loop or send packets nowhere), and the
// leaves' own.
func htbWarnings(c HTBConfig, env *Env) []string {
	t, err := checkHTB(&c)
	if err != nil {
		return nil
	}
	h := c.handle()
	var w []string
	for i := range c.Classes {
		cl := &c.Classes[i]
		if t.parent[i] < 0 && cl.Parent != 0 && cl.Parent != h {
			w = append(w, fmt.Sprintf("class %v: parent %v does not exist when the class is made, so the kernel makes %v a root class; create %v first", cl.ID, cl.Parent, cl.ID, cl.Parent))
		}
		d := cl.withDefaults()
		if d.Ceil < d.Rate {
			w = append(w, fmt.Sprintf("class %v: ceil %d bit/s is below its rate %d bit/s: the class never sends faster than the ceil; raise ceil to at least the rate", cl.ID, d.Ceil.BitsPerSecond(), d.Rate.BitsPerSecond()))
		}
		if cl.Prio >= htbNumPrio {
			w = append(w, fmt.Sprintf("class %v: prio %d is above 7; the kernel takes it as 7", cl.ID, cl.Prio))
		}
		if t.children[i] == 0 {
			if _, word := htbQuantum(cl, c.r2q()); word != "" {
				// The kernel's own words (htb_change_class).
				w = append(w, fmt.Sprintf("quantum of class %X is %s. Consider r2q change.", uint32(cl.ID), word))
			}
			for _, s := range cl.Leaf {
				for _, m := range Warnings(s, env) {
					w = append(w, fmt.Sprintf("class %v: %s: %s", cl.ID, s.Kind(), m))
				}
			}
		}
	}
	if c.Default != 0 {
		id := MakeClassID(h.Major(), c.Default)
		switch i, ok := t.index[id]; {
		case !ok:
			w = append(w, fmt.Sprintf("default class %v does not exist: unclassified packets go to the direct queue, unshaped", id))
		case t.children[i] > 0:
			w = append(w, fmt.Sprintf("default class %v has child classes: unclassified packets go to the direct queue, unshaped", id))
		}
	}
	for i := range c.Filters {
		f := &c.Filters[i]
		if p, ok := t.index[f.Parent]; ok {
			if t.children[p] == 0 {
				w = append(w, fmt.Sprintf("filter %d (prio %d) on %v: %v has no child classes, and htb consults only the filters of the qdisc and of the inner classes they lead to: it never runs", i+1, f.Prio, f.Parent, f.Parent))
				continue
			}
			for a := p; a >= 0; a = t.parent[a] {
				if c.Classes[a].ID == f.ClassID {
					w = append(w, fmt.Sprintf("filter %d (prio %d) on %v sends packets back to %v: they go round until the kernel drops them, after %d classes", i+1, f.Prio, f.Parent, f.ClassID, htbMaxDepth))
					break
				}
			}
		}
		if f.ClassID == h {
			continue
		}
		if _, ok := t.index[f.ClassID]; !ok {
			w = append(w, fmt.Sprintf("filter %d (prio %d): flowid %v names no class of htb %v, so the packets it matches go on to the default class", i+1, f.Prio, f.ClassID, h))
		}
	}
	return w
}
