package qdisc

import (
	"fmt"

	"wanlab/clock"
	"wanlab/packet"
)

// PrioConfig is prio (tc-prio(8)): bands served in strict priority, each
// a chain of disciplines of its own (the class MAJ:1 is band 0, MAJ:2
// band 1, ...), its filters, and a priomap for the packets they leave.
type PrioConfig struct {
	// Handle is the qdisc's major ("handle 1:"); 0 means the kernel's
	// first automatic handle, 8001:.
	Handle uint16
	// Bands is the number of bands, 2 to 16; 0 means tc's 3.
	Bands int
	// Priomap maps a packet's priority (0 to 15) to its band: nil means
	// tc's default, 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 (pfifo_fast's), else
	// it has 16 entries, each below Bands.
	Priomap []uint8
	// Leaves[b] is the chain under band b (Leaves[b][0] its qdisc, each
	// next spec the child of the one before); a band beyond Leaves, or
	// with none, has the kernel's default, a pfifo of txqueuelen
	// packets.
	Leaves [][]Spec
	// Filters are the qdisc's filters (Parent 0 or Handle:); a filter's
	// flowid MAJ:N sends a packet to band N-1, and a minor outside 1..Bands
	// to the band the priomap gives priority 0.
	Filters []Filter
}

// Kind returns "prio".
func (PrioConfig) Kind() string { return "prio" }

// DefaultPriomap returns tc's default priomap, pfifo_fast's: 1 2 2 2 1 2
// 0 0 1 1 1 1 1 1 1 1.
func DefaultPriomap() []uint8 {
	m := prio2band
	return m[:]
}

// Prio's limits (TCQ_MIN_PRIO_BANDS, TCQ_PRIO_BANDS) and tc's default.
const (
	prioMinBands     = 2
	prioMaxBands     = 16
	prioDefaultBands = 3
)

func (c *PrioConfig) handle() ClassID {
	if c.Handle == 0 {
		return handleOf(htbAutoHandle)
	}
	return handleOf(c.Handle)
}

// NumBands returns the number of bands: Bands, or tc's 3 when it is 0.
func (c PrioConfig) NumBands() int { return c.bands() }

func (c *PrioConfig) bands() int {
	if c.Bands == 0 {
		return prioDefaultBands
	}
	return c.Bands
}

func (c *PrioConfig) priomap() [16]uint8 {
	if c.Priomap == nil {
		return prio2band
	}
	var m [16]uint8
	copy(m[:], c.Priomap)
	return m
}

// checkPrio refuses what tc or the kernel (prio_tune) refuses of c.
func checkPrio(c *PrioConfig) error {
	n := c.bands()
	switch {
	case n < prioMinBands || n > prioMaxBands:
		return fmt.Errorf("prio: bands %d out of range; give %d to %d", n, prioMinBands, prioMaxBands)
	case c.Priomap != nil && len(c.Priomap) != 16:
		return fmt.Errorf("prio: the priomap has %d entries; give 16, one per priority 0 to 15", len(c.Priomap))
	case len(c.Leaves) > n:
		return fmt.Errorf("prio: %d band chains for %d bands; give at most one per band", len(c.Leaves), n)
	}
	m := c.priomap()
	for p, b := range m {
		if int(b) >= n {
			what := "the priomap"
			if c.Priomap == nil {
				what = "tc's default priomap (1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1)"
			}
			return fmt.Errorf("prio: %s sends priority %d to band %d, but there are %d bands (0 to %d); give a priomap of bands below %d", what, p, b, n, n-1, n)
		}
	}
	return checkFilters(c.Filters, c.handle(), "prio", nil)
}

// prioWarnings returns what of a valid configuration behaves differently
// from what its numbers suggest: filters whose flowid names no band, and
// the bands' own warnings.
func prioWarnings(c PrioConfig, env *Env) []string {
	if checkPrio(&c) != nil {
		return nil
	}
	var w []string
	for i, f := range c.Filters {
		if m := int(f.ClassID.Minor()); m < 1 || m > c.bands() {
			w = append(w, fmt.Sprintf("filter %d (prio %d): flowid %v names no band (1 to %d): the packets it matches go to band %d, priority 0's", i+1, f.Prio, f.ClassID, c.bands(), c.priomap()[0]))
		}
	}
	for b, chain := range c.Leaves {
		for _, s := range chain {
			for _, m := range Warnings(s, env) {
				w = append(w, fmt.Sprintf("band %d (class %v): %s: %s", b, MakeClassID(c.handle().Major(), uint16(b+1)), s.Kind(), m))
			}
		}
	}
	return w
}

// Prio is the kernel's prio qdisc (sch_prio.c): a packet goes to the band
// its filters choose (flowid MAJ:N is band N-1; a minor outside the bands
// is the band of priority 0), or, when none matches, to the band the
// priomap gives its priority (forwardPriority: from the TOS for IPv4, as
// pfifo_fast's); Dequeue takes from the first band that has a packet
// ready, so a band whose discipline holds packets it will not yet send
// (a tbf, a netem) lets the bands below go first.
type Prio struct {
	cfg     PrioConfig
	env     *Env
	u       units
	seed    uint64
	handle  ClassID
	priomap [16]uint8
	bands   []subtree
	filters classifier
	peeked  peekHold
	stats   Stats
}

var _ Qdisc = (*Prio)(nil)

// NewPrio returns the prio cfg describes on env's device, its bands'
// disciplines built from their chains (positions drawing from seeds of
// their own: see subtreeSeed).
func NewPrio(cfg PrioConfig, env *Env) (*Prio, error) { return newPrio(cfg, env, rootSeed(env)) }

func newPrio(cfg PrioConfig, env *Env, seed uint64) (*Prio, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("prio: %w", err)
	}
	if err := checkPrio(&cfg); err != nil {
		return nil, err
	}
	q := &Prio{env: env, u: unitsOf(env), seed: seed, handle: cfg.handle()}
	for b := range cfg.bands() {
		t, err := newSubtree(leafOf(cfg.Leaves, b), env, subtreeSeed(seed, q.band(b)), q.u)
		if err != nil {
			return nil, fmt.Errorf("prio: band %d: %w", b, err)
		}
		q.bands = append(q.bands, t)
	}
	q.setOptions(cfg)
	return q, nil
}

// leafOf returns the chain of band b, or nil.
func leafOf(leaves [][]Spec, b int) []Spec {
	if b < len(leaves) {
		return leaves[b]
	}
	return nil
}

// band returns the class of band b.
func (q *Prio) band(b int) ClassID { return MakeClassID(q.handle.Major(), uint16(b+1)) }

// setOptions takes cfg's priomap and filters.
func (q *Prio) setOptions(cfg PrioConfig) {
	q.cfg = cfg
	q.priomap = cfg.priomap()
	fs := make([]*Filter, len(cfg.Filters))
	for i := range cfg.Filters {
		fs[i] = &cfg.Filters[i]
	}
	q.filters = newClassifier(fs)
}

// classify returns p's band (prio_classify).
func (q *Prio) classify(b []byte) int {
	if id, ok := q.filters.classify(b); ok {
		band := int(id.Minor()) - 1
		if band < 0 || band >= len(q.bands) {
			return int(q.priomap[0])
		}
		return band
	}
	return int(q.priomap[forwardPriority(b)])
}

// Enqueue queues p in its band.
func (q *Prio) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	_, v := q.enqueueUnits(now, p)
	return v
}

func (q *Prio) enqueueUnits(now clock.Time, p *packet.Packet) (int, Verdict) {
	refused, v := q.bands[q.classify(p.Bytes())].enq.enqueueUnits(now, p)
	q.stats.Drops += uint64(refused)
	return refused, v
}

// Dequeue returns the packet of the first band that has one ready, else
// nil and the earliest time a band named.
func (q *Prio) Dequeue(now clock.Time) (*packet.Packet, clock.Time) { return q.dequeueRun(now, nil) }

func (q *Prio) dequeueRun(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	return q.peeked.dequeue(now, g, q.u, q.env, &q.stats, q.take)
}

// take is prio_dequeue under g: a band whose packet g refused holds it,
// and the bands below wait for it, as prio_peek stops at the first band
// with a packet.
func (q *Prio) take(now clock.Time, g gate) (*packet.Packet, clock.Time) {
	next := clock.Never
	for i := range q.bands {
		p, n := q.bands[i].pull(now, g)
		if p != nil {
			return p, now
		}
		if g != nil && n <= now {
			return nil, now
		}
		next = min(next, n)
	}
	return nil, next
}

// Peek returns the packet Dequeue(now) would return, decided and held for
// it, as the kernel's qdisc_peek_dequeued.
func (q *Prio) Peek(now clock.Time) (*packet.Packet, clock.Time) { return q.peeked.peek(now, q.take) }

// Len returns the number of packets in all bands (and a peeked one).
func (q *Prio) Len() int {
	n := q.peeked.units(q.u)
	for i := range q.bands {
		n += q.bands[i].Len()
	}
	return n
}

// Backlog returns the number of bytes in all bands (and a peeked one).
func (q *Prio) Backlog() int {
	n := q.peeked.size(q.u)
	for i := range q.bands {
		n += q.bands[i].Backlog()
	}
	return n
}

// Stats returns prio's counters; Drops counts what its bands refused.
func (q *Prio) Stats() Stats {
	s := q.stats
	s.Qlen, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Kind returns "prio".
func (q *Prio) Kind() string { return "prio" }

// Child returns nil: prio's children are its bands (Bands).
func (q *Prio) Child() Qdisc { return nil }

// Config returns the configuration with its defaults: the handle, the
// bands, the whole priomap, each band's chain (nil for the default
// pfifo) and the filters.
func (q *Prio) Config() Spec {
	c := q.cfg
	c.Handle, c.Bands = q.handle.Major(), len(q.bands)
	c.Priomap = append([]uint8(nil), q.priomap[:]...)
	c.Leaves = make([][]Spec, len(q.bands))
	for i := range q.bands {
		c.Leaves[i] = q.bands[i].config()
	}
	c.Filters = append([]Filter(nil), q.cfg.Filters...)
	return c
}

// Flush drops every packet of every band with ReasonFlushed.
func (q *Prio) Flush(now clock.Time) {
	q.peeked.flush(now, q, q.env, q.u, &q.stats)
	for i := range q.bands {
		q.bands[i].Flush(now)
	}
}

// PrioBand is one band of prio as `tc -s class show` shows it: the class
// MAJ:N (band N-1), whose counters are its qdisc's.
type PrioBand struct {
	Class ClassID
	// Leaf is the band's qdisc (the root of its chain); DefaultLeaf says
	// it is the kernel's default pfifo.
	Leaf        Qdisc
	DefaultLeaf bool
}

// Bands returns the bands, band 0 first.
func (q *Prio) Bands() []PrioBand {
	out := make([]PrioBand, len(q.bands))
	for i := range q.bands {
		out[i] = PrioBand{Class: q.band(i), Leaf: q.bands[i].Qdisc, DefaultLeaf: q.bands[i].dflt}
	}
	return out
}

// Change applies spec as the kernel's prio_tune does: the bands and the
// priomap change in place; the bands beyond a lower count go, with their
// packets (ReasonFlushed); new bands get the default pfifo; each band's
// chain then changes as tc would change it (see subtree), and the filters
// are spec's. The handle cannot change (another handle is another
// qdisc).
func (q *Prio) Change(now clock.Time, spec Spec) error {
	c, err := specAs[PrioConfig](q, spec)
	if err != nil {
		return err
	}
	if err := q.checkChange(c); err != nil {
		return err
	}
	n := c.bands()
	for i := n; i < len(q.bands); i++ {
		q.bands[i].Flush(now)
	}
	q.bands = q.bands[:min(n, len(q.bands))]
	for b := len(q.bands); b < n; b++ {
		t, err := newSubtree(nil, q.env, subtreeSeed(q.seed, q.band(b)), q.u)
		if err != nil {
			panic(fmt.Sprintf("qdisc: prio's default band does not build: %v", err))
		}
		q.bands = append(q.bands, t)
	}
	for b := range q.bands {
		q.bands[b].change(now, leafOf(c.Leaves, b), q.env, q.u)
	}
	q.setOptions(c)
	return nil
}

func (q *Prio) checkChange(s Spec) error {
	c, err := specAs[PrioConfig](q, s)
	if err != nil {
		return err
	}
	if err := checkPrio(&c); err != nil {
		return err
	}
	if c.handle() != q.handle {
		return fmt.Errorf("prio: the handle %v cannot become %v in place; replace the qdisc (its packets are lost)", q.handle, c.handle())
	}
	for b := range min(c.bands(), len(q.bands)) {
		if err := q.bands[b].check(leafOf(c.Leaves, b), q.env); err != nil {
			return fmt.Errorf("prio: band %d: %w", b, err)
		}
	}
	for b := len(q.bands); b < c.bands(); b++ {
		var t subtree
		if err := t.check(leafOf(c.Leaves, b), q.env); err != nil {
			return fmt.Errorf("prio: band %d: %w", b, err)
		}
	}
	return nil
}
