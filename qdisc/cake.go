package qdisc

import (
	"fmt"
	"math"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// Cake's table sizes (sch_cake.c): 1024 flow queues per tin in sets of 8
// ways, at most 8 tins.
const (
	cakeQueues  = 1024
	cakeSetWays = 8
	cakeMaxTins = 8
)

// A flow's place in its tin's rotations (CAKE_SET_*): sparse flows are new
// ones that have not used their first quantum, sparse-wait ones have but
// emptied (counted sparse, rotating as bulk), decaying ones are empty and
// wait for COBALT to come to rest.
const (
	cakeSetNone uint8 = iota
	cakeSetSparse
	cakeSetSparseWait
	cakeSetBulk
	cakeSetDecaying
)

// The lists of a tin, by index.
const (
	cakeNoList uint8 = iota
	cakeNewFlows
	cakeOldFlows
	cakeDecayingFlows
	cakeListCount
)

// cakeFlow is struct cake_flow: a queue with its COBALT state, its DRR
// deficit, its hosts' slots and its links in the tin's lists.
type cakeFlow struct {
	q                ring
	cv               cobaltVars
	deficit          int32
	dropped          uint32
	srchost, dsthost uint16
	set              uint8
	list             uint8
	// prev and next link the flow in its list: a flow's index plus 1,
	// 0 for none (so that a zero flow is on no list).
	prev, next int16
}

// cakeHost is struct cake_host: a host's hash tag and its bulk flows, as a
// source and as a destination.
type cakeHost struct {
	srcTag, dstTag   uint32
	srcBulk, dstBulk uint16
}

// cakeList is a doubly linked list of a tin's flows, by index plus 1 (0:
// empty): cake moves decaying flows back from the middle of their list.
type cakeList struct{ head, tail int16 }

// empty reports whether the list has no flow.
func (l cakeList) empty() bool { return l.head == 0 }

// first is the index of the list's first flow.
func (l cakeList) first() int { return int(l.head) - 1 }

// cakeTin is struct cake_tin_data.
type cakeTin struct {
	flows       [cakeQueues]cakeFlow
	backlogs    [cakeQueues]uint32
	tags        [cakeQueues]uint32
	overflowIdx [cakeQueues]uint16
	hosts       [cakeQueues]cakeHost
	lists       [cakeListCount]cakeList
	flowQuantum uint16

	cp            cobaltParams
	dropOverlimit uint32
	bulkFlows     uint16
	sparseFlows   uint16
	decayingFlows uint16
	unresponsive  uint16
	maxSkblen     uint32

	timeNext clock.Time
	rateNs   uint64
	rateBps  uint64
	rateShft uint8

	tinQuantum uint16
	tinDeficit int32
	tinBacklog uint32
	tinDropped uint32
	tinECNMark uint32

	packets  uint32
	bytes    uint64
	ackDrops uint32

	avgeDelay, peakDelay, baseDelay uint64

	wayDirects, wayHits, wayMisses, wayCollisions uint32
}

// cakeHeapEntry is struct cake_heap_entry: a tin and a flow.
type cakeHeapEntry struct {
	t uint8
	b uint16
}

// Cake is Linux's cake (sch_cake.c): a deficit-mode shaper with overhead
// compensation, Diffserv tins served by a soft priority scheduler (a tin
// within its share of the rate goes first, one above it only in turn),
// 1024 flow queues a tin behind an 8-way set-associative hash with
// per-host fairness (DRR++ whose quantum a host's flows share), COBALT on
// every flow, and on overflow drops from the head of the fattest flow.
type Cake struct {
	cfg  CakeConfig
	env  *Env
	seed uint64
	rnd  prandom
	u    units

	tins         []cakeTin // cakeMaxTins of them, allocated once
	overflowHeap [cakeQueues * cakeMaxTins]cakeHeapEntry
	overflowTO   uint16

	tinCnt   int
	tinIndex *[64]uint8
	tinOrder *[cakeMaxTins]uint8
	flowMode uint8
	// dsrc and ddst are cake_dsrc and cake_ddst of flowMode.
	dsrc, ddst bool

	rateShft     uint8
	rateNs       uint64
	timeNext     clock.Time
	failsafeNext clock.Time
	intervalUs   uint32
	targetUs     uint32

	bufferUsed    uint32
	bufferMaxUsed uint32
	bufferLimit   uint32

	curTin  int
	curFlow int

	avgNetoff            uint32
	maxNetlen, maxAdjlen uint16
	minNetlen, minAdjlen uint16
	qlen                 int // units held in the flow queues
	backlog              int // bytes held in the flow queues (Env.PktLen)
	peeked               *packet.Packet
	stats                Stats
	hdr                  int
	// capacity is avg_peak_bandwidth: cake_init sets it to the rate, and
	// only autorate-ingress (not built) moves it.
	capacity uint64
	// lastLen and lastAdj are the last length calcOverhead counted in
	// the statistics and its adjusted length (lastLen -1: none).
	lastLen    int
	lastAdj    uint32
	quantumDiv *[cakeQueues + 1]uint16
}

var _ Qdisc = (*Cake)(nil)

// cakeQuantumDiv is quantum_div: 65535/i, entry 0 ~0.
var cakeQuantumDiv = func() (d [cakeQueues + 1]uint16) {
	d[0] = math.MaxUint16
	for i := 1; i <= cakeQueues; i++ {
		d[i] = uint16(65535 / i)
	}
	return d
}()

// cakeMemOverhead is what each packet's skb truesize adds to its length
// in cake's memory accounting: the figure fq_codel's memory_limit uses,
// measured for a full-size packet from a TUN device
// (DefaultFQCoDelMemOverhead).
const cakeMemOverhead = DefaultFQCoDelMemOverhead

// NewCake returns a cake discipline, its flow hash and its random draws
// (BLUE's, the DRR dither's) keyed by PositionSeed(env.Seed, 0).
func NewCake(cfg CakeConfig, env *Env) (*Cake, error) { return newCake(cfg, env, rootSeed(env)) }

func newCake(cfg CakeConfig, env *Env, seed uint64) (*Cake, error) {
	if err := env.Check(); err != nil {
		return nil, fmt.Errorf("cake: %w", err)
	}
	if err := checkCakeConfig(cfg); err != nil {
		return nil, err
	}
	q := &Cake{
		env:        env,
		seed:       seed,
		rnd:        newPrandom(DeriveSeed(seed, 1)),
		u:          unitsOf(env),
		hdr:        env.headerLen(),
		tins:       make([]cakeTin, cakeMaxTins),
		quantumDiv: &cakeQuantumDiv,
		minNetlen:  math.MaxUint16,
		minAdjlen:  math.MaxUint16,
	}
	for i := range q.tins {
		b := &q.tins[i]
		for j := range b.flows {
			k := j*cakeMaxTins + i
			q.overflowHeap[k] = cakeHeapEntry{uint8(i), uint16(j)}
			b.overflowIdx[j] = uint16(k)
		}
	}
	q.apply(0, cfg)
	q.capacity = uint64(q.cfg.Bandwidth)
	return q, nil
}

// apply is cake_change's taking of every option, then cake_reconfigure.
func (q *Cake) apply(now clock.Time, cfg CakeConfig) {
	cfg = cfg.WithDefaults()
	if cfg.Compensate != q.cfg.Compensate || cfg.Overhead != q.cfg.Overhead || q.tinCnt == 0 {
		q.maxNetlen, q.maxAdjlen = 0, 0
		q.minNetlen, q.minAdjlen = math.MaxUint16, math.MaxUint16
	}
	q.cfg = cfg
	q.lastLen = -1
	q.flowMode = cakeFlowModeKernel[cfg.FlowMode]
	q.dsrc, q.ddst = cakeDsrc(q.flowMode), cakeDdst(q.flowMode)
	q.intervalUs = max(uint32(cfg.RTT/time.Microsecond), 1)
	q.targetUs = max(uint32(cfg.Target/time.Microsecond), 1)
	q.reconfigure(now)
}

// Change applies spec as cake_change does: the queues and their state
// stay, the tins a smaller layout no longer has are emptied (their
// packets dropped with ReasonFlushed), and the rates, thresholds and
// limits are recomputed.
func (q *Cake) Change(now clock.Time, spec Spec) error {
	c, err := specAs[CakeConfig](q, spec)
	if err != nil {
		return err
	}
	if err := checkCakeConfig(c); err != nil {
		return err
	}
	q.apply(now, c)
	return nil
}

func (q *Cake) checkChange(spec Spec) error {
	c, err := specAs[CakeConfig](q, spec)
	if err != nil {
		return err
	}
	return checkCakeConfig(c)
}

// clearTin is cake_clear_tin: every packet of tin t is dropped, at now.
func (q *Cake) clearTin(now clock.Time, t int) {
	b := &q.tins[t]
	for i := range b.flows {
		for b.flows[i].q.Len() > 0 {
			p := q.dequeueOne(b, i)
			dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonFlushed)
		}
	}
}

// Flush drops every packet held with ReasonFlushed, as qdisc_reset does
// through cake_reset (which leaves the flows' state).
func (q *Cake) Flush(now clock.Time) {
	if q.peeked != nil {
		dropUnits(now, q.peeked, q, q.env, q.u, &q.stats, ReasonFlushed)
		q.peeked = nil
	}
	for t := range q.tins {
		b := &q.tins[t]
		for i := range b.flows {
			for b.flows[i].q.Len() > 0 {
				dropUnits(now, q.dequeueOne(b, i), q, q.env, q.u, &q.stats, ReasonFlushed)
			}
		}
	}
}

// --- lists

func (b *cakeTin) unlink(i int) {
	f := &b.flows[i]
	if f.list == cakeNoList {
		return
	}
	l := &b.lists[f.list]
	if f.prev != 0 {
		b.flows[f.prev-1].next = f.next
	} else {
		l.head = f.next
	}
	if f.next != 0 {
		b.flows[f.next-1].prev = f.prev
	} else {
		l.tail = f.prev
	}
	f.prev, f.next, f.list = 0, 0, cakeNoList
}

// moveTail is list_move_tail (list_add_tail for a flow on no list).
func (b *cakeTin) moveTail(i int, list uint8) {
	b.unlink(i)
	f := &b.flows[i]
	l := &b.lists[list]
	f.list, f.prev, f.next = list, l.tail, 0
	if l.tail != 0 {
		b.flows[l.tail-1].next = int16(i + 1)
	} else {
		l.head = int16(i + 1)
	}
	l.tail = int16(i + 1)
}

// --- classification

// dsrc and ddst are cake_dsrc and cake_ddst: whether the mode shares a
// quantum among a source host's (destination host's) flows.
func cakeDsrc(mode uint8) bool { return mode&cakeFlowDualSrc == cakeFlowDualSrc }
func cakeDdst(mode uint8) bool { return mode&cakeFlowDualDst == cakeFlowDualDst }

// selectTin is cake_select_tin: the tin of p's DSCP in the layout's table
// (washing the DSCP first if asked). wanlab's packets carry neither a
// firewall mark nor a priority, so those overrides never apply.
func (q *Cake) selectTin(p *packet.Packet) int {
	b := p.Bytes()
	var dscp uint8
	if len(b) >= 20 && b[0]>>4 == 4 {
		dscp = b[1] >> 2
	} else {
		dscp = packet.DSCP(b)
	}
	if q.cfg.Wash && dscp != 0 {
		cakeWash(b)
	}
	if q.cfg.Diffserv == CakeBestEffort {
		return 0
	}
	tin := int(q.tinIndex[dscp])
	if tin >= q.tinCnt {
		tin = 0
	}
	return tin
}

// cakeWash clears the DSCP and keeps the ECN field, as
// ipv4_change_dsfield(iph, INET_ECN_MASK, 0) and its IPv6 twin do.
func cakeWash(b []byte) {
	switch packet.IPVersion(b) {
	case 4:
		b[1] &= 3
		ihl := int(b[0]&0x0f) * 4
		b[10], b[11] = 0, 0
		sum := packet.Checksum(b[:ihl])
		b[10], b[11] = byte(sum>>8), byte(sum)
	case 6:
		b[0] &= 0xf0
		b[1] &= 0x3f
	}
}

// hostHashes returns the hashes of p's source and destination addresses
// alone, as cake_hash takes them from flow_hash_from_keys with the other
// address, the ports and the protocol zeroed: packet.Tuple's seeded hash,
// fq_codel's flow key. Both, like the kernel's, sort the two addresses,
// so a host hashes alike as a source and as a destination.
func (q *Cake) hostHashes(p *packet.Packet) (src, dst uint32) {
	b := p.Bytes()
	var t packet.Tuple
	switch packet.IPVersion(b) {
	case 4:
		t.Version = 4
		copy(t.Src[:4], b[12:16])
		src = t.Hash(q.seed)
		t.Src = [16]byte{}
		copy(t.Dst[:4], b[16:20])
		dst = t.Hash(q.seed)
	case 6:
		t.Version = 6
		copy(t.Src[:], b[8:24])
		src = t.Hash(q.seed)
		t.Src = [16]byte{}
		copy(t.Dst[:], b[24:40])
		dst = t.Hash(q.seed)
	}
	return src, dst
}

// hash is cake_hash: the flow's queue in tin b by set-associative lookup
// (a queue already tagged with the flow's hash in the set of 8, else an
// empty one, else the original, a collision), and the hosts' slots the
// dual and triple modes count bulk flows in, found the same way.
func (q *Cake) hash(b *cakeTin, p *packet.Packet) int {
	mode := q.flowMode
	if mode == cakeFlowNone {
		return 0
	}
	// The host hashes matter only for a flow hash made of them or for
	// a queue that takes (new) hosts: the kernel computes them for
	// every packet, wanlab when they are used, with the same result.
	var flowHash, srcHash, dstHash uint32
	hostsDone := false
	if mode&cakeFlowFlows != 0 {
		flowHash = p.FlowHash(q.seed)
	} else {
		srcHash, dstHash = q.hostHashes(p)
		hostsDone = true
		if mode&cakeFlowSrcIP != 0 {
			flowHash ^= srcHash
		}
		if mode&cakeFlowDstIP != 0 {
			flowHash ^= dstHash
		}
	}
	reduced := int(flowHash % cakeQueues)
	if b.tags[reduced] == flowHash && b.flows[reduced].set != cakeSetNone {
		b.wayDirects++
		return reduced
	}
	inner := reduced % cakeSetWays
	outer := reduced - inner
	allocSrc, allocDst := false, false
	k := inner
	found := false
	for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
		if b.tags[outer+k] == flowHash {
			if i != 0 {
				b.wayHits++
			}
			if b.flows[outer+k].set == cakeSetNone {
				allocSrc, allocDst = cakeDsrc(mode), cakeDdst(mode)
			}
			found = true
			break
		}
	}
	if !found {
		for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
			if b.flows[outer+k].set == cakeSetNone {
				b.wayMisses++
				found = true
				break
			}
		}
		if !found {
			// No empty queue: take the original, a collision, and
			// move its bulk count off its old hosts.
			b.wayCollisions++
			if f := &b.flows[outer+k]; f.set == cakeSetBulk {
				b.decHostBulk(f, mode)
			}
		}
		allocSrc, allocDst = cakeDsrc(mode), cakeDdst(mode)
	}
	reduced = outer + k
	b.tags[reduced] = flowHash
	f := &b.flows[reduced]
	if (allocSrc || allocDst) && !hostsDone {
		srcHash, dstHash = q.hostHashes(p)
	}
	if allocSrc {
		f.srchost = b.hostSlot(srcHash, true)
		if f.set == cakeSetBulk && b.hosts[f.srchost].srcBulk < cakeQueues {
			b.hosts[f.srchost].srcBulk++
		}
	}
	if allocDst {
		f.dsthost = b.hostSlot(dstHash, false)
		if f.set == cakeSetBulk && b.hosts[f.dsthost].dstBulk < cakeQueues {
			b.hosts[f.dsthost].dstBulk++
		}
	}
	return reduced
}

// hostSlot finds the host slot of hash h (as a source if src): one tagged
// with it in its set of 8, else one with no bulk flows, else the original,
// which it tags.
func (b *cakeTin) hostSlot(h uint32, src bool) uint16 {
	idx := int(h % cakeQueues)
	inner := idx % cakeSetWays
	outer := idx - inner
	k := inner
	for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
		hs := &b.hosts[outer+k]
		if (src && hs.srcTag == h) || (!src && hs.dstTag == h) {
			return uint16(outer + k)
		}
	}
	for i := 0; i < cakeSetWays; i, k = i+1, (k+1)%cakeSetWays {
		hs := &b.hosts[outer+k]
		if (src && hs.srcBulk == 0) || (!src && hs.dstBulk == 0) {
			break
		}
	}
	if src {
		b.hosts[outer+k].srcTag = h
	} else {
		b.hosts[outer+k].dstTag = h
	}
	return uint16(outer + k)
}

// incHostBulk and decHostBulk count a flow's joining and leaving the bulk
// rotation against its hosts, in the modes that share quanta among a
// host's flows. They keep the counts within 0..1024, as the kernel's
// cake_{inc,dec}_{src,dst}host_bulk_flow_count do since 6.14 (6.1
// decrements unconditionally on a collision, which can wrap a count and
// index quantum_div out of bounds).
func (b *cakeTin) incHostBulk(f *cakeFlow, mode uint8) {
	if cakeDsrc(mode) && b.hosts[f.srchost].srcBulk < cakeQueues {
		b.hosts[f.srchost].srcBulk++
	}
	if cakeDdst(mode) && b.hosts[f.dsthost].dstBulk < cakeQueues {
		b.hosts[f.dsthost].dstBulk++
	}
}

func (b *cakeTin) decHostBulk(f *cakeFlow, mode uint8) {
	if cakeDsrc(mode) && b.hosts[f.srchost].srcBulk > 0 {
		b.hosts[f.srchost].srcBulk--
	}
	if cakeDdst(mode) && b.hosts[f.dsthost].dstBulk > 0 {
		b.hosts[f.dsthost].dstBulk--
	}
}

// hostLoad is the larger of the flow's hosts' bulk flows, at least 1, in
// the modes that share a host's quantum (dsrc, ddst).
func (b *cakeTin) hostLoad(f *cakeFlow, dsrc, ddst bool) uint16 {
	load := uint16(1)
	if dsrc {
		load = max(load, b.hosts[f.srchost].srcBulk)
	}
	if ddst {
		load = max(load, b.hosts[f.dsthost].dstBulk)
	}
	return load
}

// --- lengths

// calcOverhead is cake_calc_overhead for one packet of len bytes as the
// device counts them: with the overhead flag, the device's header (the
// network offset) is taken off; then the overhead, the mpu, and the ATM
// cells or PTM's extra byte in 64.
func (q *Cake) calcOverhead(n int, stats bool) uint32 {
	// The result depends on n alone: the last one is kept, and its
	// lengths are already in the statistics.
	if n == q.lastLen {
		return q.lastAdj
	}
	l := uint32(n)
	if q.cfg.Compensate {
		l -= uint32(q.hdr)
	}
	if stats {
		q.maxNetlen = max(q.maxNetlen, uint16(l))
		q.minNetlen = min(q.minNetlen, uint16(l))
	}
	l += uint32(int32(q.cfg.Overhead))
	if l < uint32(q.cfg.MPU) {
		l = uint32(q.cfg.MPU)
	}
	switch q.cfg.ATM {
	case CakeATMCells:
		l = (l + 47) / 48 * 53
	case CakePTM:
		l += (l + 63) / 64
	}
	if stats {
		q.maxAdjlen = max(q.maxAdjlen, uint16(l))
		q.minAdjlen = min(q.minAdjlen, uint16(l))
		q.lastLen, q.lastAdj = n, l
	}
	return l
}

// adjusted is cake_overhead: a super-packet is charged segment by segment
// (every segment but the last the same length). stats says whether to
// count the lengths in the extended statistics (at enqueue; the kernel
// keeps the result in the skb's control block, wanlab recomputes it).
func (q *Cake) adjusted(p *packet.Packet, stats bool) uint32 {
	if p.Segs <= 1 {
		return q.calcOverhead(p.Len()+q.hdr, stats)
	}
	segs := p.Segments()
	full := q.calcOverhead(p.SegmentLen(0)+q.hdr, stats)
	last := q.calcOverhead(p.SegmentLen(segs-1)+q.hdr, stats)
	return full*uint32(segs-1) + last
}

// truesize is the memory cake counts for p (skb->truesize).
func (q *Cake) truesize(p *packet.Packet) uint32 {
	return uint32(q.u.whole(p) + p.Segments()*cakeMemOverhead)
}

// --- the overflow heap (a max-heap of every queue's backlog)

func (q *Cake) heapSwap(i, j int) {
	ii, jj := q.overflowHeap[i], q.overflowHeap[j]
	q.overflowHeap[i], q.overflowHeap[j] = jj, ii
	q.tins[ii.t].overflowIdx[ii.b] = uint16(j)
	q.tins[jj.t].overflowIdx[jj.b] = uint16(i)
}

func (q *Cake) heapBacklog(i int) uint32 {
	e := q.overflowHeap[i]
	return q.tins[e.t].backlogs[e.b]
}

// heapify is cake_heapify: sift entry i down.
func (q *Cake) heapify(i int) {
	const a = cakeMaxTins * cakeQueues
	mb := q.heapBacklog(i)
	m := i
	for m < a {
		l := m + m + 1
		r := l + 1
		if l < a {
			if lb := q.heapBacklog(l); lb > mb {
				m, mb = l, lb
			}
		}
		if r < a {
			if rb := q.heapBacklog(r); rb > mb {
				m, mb = r, rb
			}
		}
		if m == i {
			break
		}
		q.heapSwap(i, m)
		i = m
	}
}

// heapifyUp is cake_heapify_up: sift entry i up.
func (q *Cake) heapifyUp(i int) {
	for i > 0 && i < cakeMaxTins*cakeQueues {
		p := (i - 1) >> 1
		if q.heapBacklog(i) <= q.heapBacklog(p) {
			break
		}
		q.heapSwap(i, p)
		i = p
	}
}

// --- the shaper

// advanceShaper is cake_advance_shaper: p's adjusted length is charged to
// its tin's schedule (from its last time if that is past, from now if the
// tin was ahead by less than this packet) and to the global one; a packet
// delivered (not dropped) also advances the failsafe schedule, 1.5 times
// as far.
func (q *Cake) advanceShaper(b *cakeTin, p *packet.Packet, now clock.Time, drop bool) uint32 {
	l := q.adjusted(p, false)
	if q.rateNs != 0 {
		tinDur := clock.Time((uint64(l) * b.rateNs) >> b.rateShft)
		globalDur := clock.Time((uint64(l) * q.rateNs) >> q.rateShft)
		failsafeDur := globalDur + globalDur>>1
		if b.timeNext < now {
			b.timeNext += tinDur
		} else if b.timeNext < now+tinDur {
			b.timeNext = now + tinDur
		}
		q.timeNext += globalDur
		if !drop {
			q.failsafeNext += failsafeDur
		}
	}
	return l
}

// --- enqueue

// Enqueue is cake_enqueue: p goes to its tin (by DSCP) and its flow queue
// (by the flow mode's hash), split into its segments unless no-split-gso
// is set; the ACK filter may drop an older ACK of its flow; a flow that
// was idle or decaying becomes sparse with a quantum shared by its hosts;
// past the memory limit cake drops from the head of the fattest queue.
// It returns Congested when those drops took from p's own queue (p itself
// may have been among them), Queued otherwise, as Env's contract asks and
// as later kernels' cake_enqueue returns NET_XMIT_CN (6.1 returns
// NET_XMIT_SUCCESS either way).
func (q *Cake) Enqueue(now clock.Time, p *packet.Packet) Verdict {
	tin := q.selectTin(p)
	b := &q.tins[tin]
	idx := q.hash(b, p)
	f := &b.flows[idx]

	// The shaper's schedule must not be stale.
	if b.tinBacklog == 0 {
		if b.timeNext < now {
			b.timeNext = now
		}
		if q.qlen == 0 && q.peeked == nil {
			if q.timeNext < now {
				q.failsafeNext = now
				q.timeNext = now
			} else if q.timeNext > now && q.failsafeNext > now {
				q.stats.Overlimits++
			}
		}
	}

	n := q.u.whole(p)
	if uint32(n) > b.maxSkblen {
		b.maxSkblen = uint32(n)
	}
	q.avgNetoff = uint32(cakeEWMA(uint64(q.avgNetoff), uint64(q.hdr)<<16, 8))

	if p.Segs > 1 && !q.cfg.NoSplitGSO {
		var slen int
		for rest := p; rest != nil; {
			seg := rest
			if rest.Segs > 1 {
				seg, rest = q.env.cut(rest, 1)
			} else {
				rest = nil
			}
			seg.Enqueued = now
			q.adjusted(seg, true)
			f.q.Push(seg)
			l := seg.Len() + q.hdr
			q.qlen++
			slen += l
			q.bufferUsed += q.truesize(seg)
			b.packets++
		}
		b.bytes += uint64(slen)
		b.backlogs[idx] += uint32(slen)
		b.tinBacklog += uint32(slen)
		q.backlog += slen
	} else {
		p.Enqueued = now
		q.adjusted(p, true)
		f.q.Push(p)
		var ack *packet.Packet
		if q.cfg.AckFilter != CakeNoAckFilter {
			ack = q.ackFilter(f)
		}
		if ack != nil {
			al := q.u.whole(ack)
			b.ackDrops++
			b.bytes += uint64(al)
			n -= al
			q.bufferUsed += q.truesize(p) - q.truesize(ack)
			q.qlen += q.u.count(p) - q.u.count(ack)
			if q.cfg.Ingress {
				q.advanceShaper(b, ack, now, true)
			}
			dropUnits(now, ack, q, q.env, q.u, &q.stats, ReasonAckFilter)
		} else {
			segs := p.Segments()
			q.bufferUsed += uint32(n + segs*cakeMemOverhead)
			if q.u.gso {
				segs = 1
			}
			q.qlen += segs
		}
		b.packets++
		b.bytes += uint64(n)
		b.backlogs[idx] += uint32(n)
		b.tinBacklog += uint32(n)
		q.backlog += n
	}

	if q.overflowTO != 0 {
		q.heapifyUp(int(b.overflowIdx[idx]))
	}

	// The flow joins the rotations.
	switch f.set {
	case cakeSetNone, cakeSetDecaying:
		if f.set == cakeSetDecaying {
			b.decayingFlows--
		}
		b.moveTail(idx, cakeNewFlows)
		f.set = cakeSetSparse
		b.sparseFlows++
		f.deficit = int32(uint32(b.flowQuantum) * uint32(q.quantumDiv[b.hostLoad(f, q.dsrc, q.ddst)]) >> 16)
	case cakeSetSparseWait:
		// It emptied while sparse but rotates as bulk: now it is.
		f.set = cakeSetBulk
		b.sparseFlows--
		b.bulkFlows++
		b.incHostBulk(f, q.flowMode)
	}

	if q.bufferUsed > q.bufferMaxUsed {
		q.bufferMaxUsed = q.bufferUsed
	}
	if q.bufferUsed <= q.bufferLimit {
		return Queued
	}
	var dropped uint32
	sameFlow := false
	for q.bufferUsed > q.bufferLimit {
		dropped++
		t, i, ok := q.drop(now)
		if !ok {
			break
		}
		sameFlow = sameFlow || (t == tin && i == idx)
	}
	b.dropOverlimit += dropped
	if sameFlow {
		return Congested
	}
	return Queued
}

// cakeEWMA is cake_ewma.
func cakeEWMA(avg, sample uint64, shift uint) uint64 {
	avg -= avg >> shift
	avg += sample >> shift
	return avg
}

// drop is cake_drop: the packet at the head of the queue with the largest
// backlog, over every tin, is dropped (ReasonOverflow), and that queue's
// BLUE probability rises. The heap is rebuilt when it has not been kept
// up, and kept up for the next 65535 dequeues. It returns the queue's tin
// and index, and false if the heap pointed at an empty queue (it is
// rebuilt next time).
func (q *Cake) drop(now clock.Time) (tin, idx int, ok bool) {
	if q.overflowTO == 0 {
		for i := cakeMaxTins * cakeQueues / 2; i >= 0; i-- {
			q.heapify(i)
		}
	}
	q.overflowTO = 65535
	e := q.overflowHeap[0]
	tin, idx = int(e.t), int(e.b)
	b := &q.tins[tin]
	f := &b.flows[idx]
	p := f.q.Pop()
	if p == nil {
		q.overflowTO = 0
		return tin, idx, false
	}
	if f.cv.queueFull(&b.cp, now) {
		b.unresponsive++
	}
	l := q.u.whole(p)
	q.bufferUsed -= q.truesize(p)
	b.backlogs[idx] -= uint32(l)
	b.tinBacklog -= uint32(l)
	q.backlog -= l
	q.qlen -= q.u.count(p)
	f.dropped++
	b.tinDropped++
	if q.cfg.Ingress {
		q.advanceShaper(b, p, now, true)
	}
	dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonOverflow)
	q.heapify(0)
	return tin, idx, true
}

// --- dequeue

// dequeueOne is cake_dequeue_one for flow idx of tin b.
func (q *Cake) dequeueOne(b *cakeTin, idx int) *packet.Packet {
	f := &b.flows[idx]
	p := f.q.Pop()
	if p == nil {
		return nil
	}
	l := q.u.whole(p)
	segs := p.Segments()
	b.backlogs[idx] -= uint32(l)
	b.tinBacklog -= uint32(l)
	q.backlog -= l
	q.bufferUsed -= uint32(l + segs*cakeMemOverhead)
	if q.u.gso {
		segs = 1
	}
	q.qlen -= segs
	if q.overflowTO != 0 {
		q.heapify(int(b.overflowIdx[idx]))
	}
	return p
}

// Dequeue returns the next packet, as cake_dequeue decides it (see take),
// or nil and the time the shaper lets the next one go (clock.Never when
// nothing is held).
func (q *Cake) Dequeue(now clock.Time) (*packet.Packet, clock.Time) {
	if p := q.peeked; p != nil {
		q.peeked = nil
		return p, now
	}
	return q.take(now)
}

// Peek returns the packet Dequeue will return; the decision (and COBALT's
// drops, and the shaper's charge) happens here once, as the kernel's
// qdisc_peek_dequeued takes the packet out of cake and holds it.
func (q *Cake) Peek(now clock.Time) (*packet.Packet, clock.Time) {
	if q.peeked == nil {
		p, next := q.take(now)
		if p == nil {
			return nil, next
		}
		q.peeked = p
	}
	return q.peeked, now
}

// take is cake_dequeue. When the global shaper is ahead of now nothing
// leaves. Unlimited, the tins take turns by their DRR quanta; shaped, the
// highest tin whose own schedule (its threshold rate) is due goes, else
// the one due soonest. In the tin, a decaying flow is looked at first once
// a call (so that emptied flows come to rest), then new flows before old
// ones, DRR++ giving a flow whose deficit is spent a quantum shared by its
// hosts' bulk flows (dithered) and a place at the end of the old flows. The
// flow's head goes through COBALT, which may drop it (in ingress mode the
// drop is charged to the shaper and the choice starts again). The packet
// delivered is charged to its flow's deficit, its tin's and the shaper.
func (q *Cake) take(now clock.Time) (*packet.Packet, clock.Time) {
	b := &q.tins[q.curTin]
	firstFlow := true
	var p *packet.Packet
	var f *cakeFlow
	var idx int
begin:
	for {
		if q.qlen == 0 {
			return nil, clock.Never
		}
		if q.timeNext > now && q.failsafeNext > now {
			q.stats.Overlimits++
			return nil, min(q.timeNext, q.failsafeNext)
		}
		if q.rateNs == 0 {
			wrapped, empty := false, true
			for b.tinDeficit < 0 || b.sparseFlows+b.bulkFlows == 0 {
				if b.tinDeficit <= 0 {
					b.tinDeficit += int32(b.tinQuantum)
				}
				if b.sparseFlows+b.bulkFlows != 0 {
					empty = false
				}
				q.curTin++
				if q.curTin >= q.tinCnt {
					q.curTin = 0
					if wrapped {
						if empty {
							return nil, clock.Never
						}
					} else {
						wrapped = true
					}
				}
				b = &q.tins[q.curTin]
			}
		} else {
			best, bestTin := clock.Time(math.MaxInt64), 0
			for t := 0; t < q.tinCnt; t++ {
				bt := &q.tins[t]
				if bt.sparseFlows+bt.bulkFlows > 0 {
					ttp := bt.timeNext - now
					if ttp <= 0 || ttp <= best {
						best, bestTin = ttp, t
					}
				}
			}
			q.curTin = bestTin
			b = &q.tins[bestTin]
			if b.sparseFlows+b.bulkFlows == 0 {
				return nil, clock.Never
			}
		}

	retry:
		for {
			l := cakeDecayingFlows
			if !firstFlow || b.lists[l].empty() {
				l = cakeNewFlows
				if b.lists[l].empty() {
					l = cakeOldFlows
					if b.lists[l].empty() {
						l = cakeDecayingFlows
						if b.lists[l].empty() {
							continue begin
						}
					}
				}
			}
			idx = b.lists[l].first()
			f = &b.flows[idx]
			q.curFlow = idx
			firstFlow = false

			if f.deficit <= 0 {
				// Flows with deficits stay out of the sparse and
				// decaying rotations.
				if f.set == cakeSetSparse {
					if f.q.Len() > 0 {
						b.sparseFlows--
						b.bulkFlows++
						f.set = cakeSetBulk
						b.incHostBulk(f, q.flowMode)
					} else {
						f.set = cakeSetSparseWait
					}
				}
				load := b.hostLoad(f, q.dsrc, q.ddst)
				f.deficit += int32((uint32(b.flowQuantum)*uint32(q.quantumDiv[load]) + q.rnd.u32()>>16) >> 16)
				b.moveTail(idx, cakeOldFlows)
				continue retry
			}

			for {
				p = q.dequeueOne(b, idx)
				if p == nil {
					// The queue was empty.
					if f.cv.queueEmpty(&b.cp, now) {
						b.unresponsive--
					}
					if f.cv.pDrop != 0 || f.cv.count != 0 || now < f.cv.dropNext {
						// Keep it until its state has decayed.
						b.moveTail(idx, cakeDecayingFlows)
						switch f.set {
						case cakeSetBulk:
							b.bulkFlows--
							b.decHostBulk(f, q.flowMode)
							b.decayingFlows++
						case cakeSetSparse, cakeSetSparseWait:
							b.sparseFlows--
							b.decayingFlows++
						}
						f.set = cakeSetDecaying
					} else {
						b.unlink(idx)
						switch f.set {
						case cakeSetSparse, cakeSetSparseWait:
							b.sparseFlows--
						case cakeSetBulk:
							b.bulkFlows--
							b.decHostBulk(f, q.flowMode)
						default:
							b.decayingFlows--
						}
						f.set = cakeSetNone
					}
					continue begin
				}
				var bulk uint32
				if q.cfg.Ingress {
					bulk = uint32(b.bulkFlows)
				}
				// The last packet of a queue may be marked, never dropped.
				if !f.cv.shouldDrop(&b.cp, now, p, bulk, &q.rnd) || f.q.Len() == 0 {
					break retry
				}
				if q.cfg.Ingress {
					l := q.advanceShaper(b, p, now, true)
					f.deficit -= int32(l)
					b.tinDeficit -= int32(l)
				}
				f.dropped++
				b.tinDropped++
				dropUnits(now, p, q, q.env, q.u, &q.stats, ReasonCobalt)
				if q.cfg.Ingress {
					continue retry
				}
			}
		}
		break
	}

	if f.cv.ecnMarked {
		b.tinECNMark++
		q.stats.Marks++
		q.env.Mark(now, p, q, ReasonCobalt)
	}
	q.u.sent(&q.stats, p)

	delay := uint64(now - p.Enqueued)
	b.avgeDelay = cakeEWMA(b.avgeDelay, delay, 8)
	b.peakDelay = cakeEWMA(b.peakDelay, delay, cakeShift(delay > b.peakDelay))
	b.baseDelay = cakeEWMA(b.baseDelay, delay, cakeShift(delay < b.baseDelay))

	l := q.advanceShaper(b, p, now, false)
	f.deficit -= int32(l)
	b.tinDeficit -= int32(l)
	if q.overflowTO != 0 {
		q.overflowTO--
	}
	return p, now
}

// cakeShift is the fast (2) or slow (8) EWMA shift of the delay trackers.
func cakeShift(fast bool) uint {
	if fast {
		return 2
	}
	return 8
}

// Len returns the packets held, a peeked one included.
func (q *Cake) Len() int {
	n := q.qlen
	if q.peeked != nil {
		n += q.u.count(q.peeked)
	}
	return n
}

// Backlog returns the bytes held, as the device counts them.
func (q *Cake) Backlog() int {
	n := q.backlog
	if q.peeked != nil {
		n += q.u.whole(q.peeked)
	}
	return n
}

// Stats returns the tc -s counters.
func (q *Cake) Stats() Stats {
	s := q.stats
	s.Qlen = q.Len()
	s.Backlog = q.Backlog()
	return s
}

// Kind returns "cake".
func (q *Cake) Kind() string { return "cake" }

// Child returns nil: cake's classes are its flows.
func (q *Cake) Child() Qdisc { return nil }

// Config returns the configuration with defaults filled in.
func (q *Cake) Config() Spec { return q.cfg }

// CakeTinStats are one tin's statistics, the TCA_CAKE_TIN_STATS_* cake
// dumps for tc -s (tc prints them as the columns of its tin table).
type CakeTinStats struct {
	ThresholdRate  uint64 // the tin's threshold, bytes a second
	SentBytes      uint64
	BacklogBytes   uint32
	TargetUs       uint32
	IntervalUs     uint32
	SentPackets    uint32
	DroppedPackets uint32
	ECNMarked      uint32
	AcksDropped    uint32
	PeakDelayUs    uint32
	AvgDelayUs     uint32
	BaseDelayUs    uint32
	WayIndirect    uint32 // way_hits
	WayMisses      uint32
	WayCollisions  uint32
	SparseFlows    uint32 // sparse and decaying
	BulkFlows      uint32
	Unresponsive   uint32
	MaxSkblen      uint32
	FlowQuantum    uint32
}

// CakeXStats are cake's extended statistics, as cake_dump_stats gives
// them: the whole discipline's, then each tin's in tc's order (bulk first
// for diffserv3 and diffserv4).
type CakeXStats struct {
	CapacityEstimate uint64 // bytes a second: the rate cake was made with (a change does not move it)
	MemoryLimit      uint32
	MemoryUsed       uint32 // the most memory held at once
	AvgNetoff        uint32
	MaxNetlen        uint32
	MaxAdjlen        uint32
	MinNetlen        uint32
	MinAdjlen        uint32
	Tins             []CakeTinStats
}

// XStats returns the extended statistics.
func (q *Cake) XStats() CakeXStats {
	x := CakeXStats{
		CapacityEstimate: q.capacity,
		MemoryLimit:      q.bufferLimit,
		MemoryUsed:       q.bufferMaxUsed,
		AvgNetoff:        (q.avgNetoff + 0x8000) >> 16,
		MaxNetlen:        uint32(q.maxNetlen),
		MaxAdjlen:        uint32(q.maxAdjlen),
		MinNetlen:        uint32(q.minNetlen),
		MinAdjlen:        uint32(q.minAdjlen),
	}
	// The kernel keeps the minimums in 16 bits initialised to ~0 and
	// dumps them as u32.
	for i := 0; i < q.tinCnt; i++ {
		b := &q.tins[q.tinOrder[i]]
		x.Tins = append(x.Tins, CakeTinStats{
			ThresholdRate:  b.rateBps,
			SentBytes:      b.bytes,
			BacklogBytes:   b.tinBacklog,
			TargetUs:       uint32(b.cp.target / 1000),
			IntervalUs:     uint32(b.cp.interval / 1000),
			SentPackets:    b.packets,
			DroppedPackets: b.tinDropped,
			ECNMarked:      b.tinECNMark,
			AcksDropped:    b.ackDrops,
			PeakDelayUs:    uint32(b.peakDelay / 1000),
			AvgDelayUs:     uint32(b.avgeDelay / 1000),
			BaseDelayUs:    uint32(b.baseDelay / 1000),
			WayIndirect:    b.wayHits,
			WayMisses:      b.wayMisses,
			WayCollisions:  b.wayCollisions,
			SparseFlows:    uint32(b.sparseFlows + b.decayingFlows),
			BulkFlows:      uint32(b.bulkFlows),
			Unresponsive:   uint32(b.unresponsive),
			MaxSkblen:      b.maxSkblen,
			FlowQuantum:    uint32(b.flowQuantum),
		})
	}
	return x
}
