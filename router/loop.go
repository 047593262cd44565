package router

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wanlab/clock"
	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
	"wanlab/tun"
)

// Buffer sizes: small buffers hold one MTU-sized packet, large ones a GSO
// super-packet; both keep DefaultHeadroom in front for the virtio-net
// header.
const (
	headroom  = packet.DefaultHeadroom
	smallData = 2048
	largeData = tun.VNetMaxPacket + 256
	// readBatch is how many packets one read pass takes at most.
	readBatch = 8
	// The loop stops sleeping l.spin before a deadline and spins. l.spin
	// starts at initialSpin and follows the wake-up delays seen, within
	// [minSpin, l.maxSpin]: maxSpin, or maxSpinRT under SCHED_FIFO, whose
	// spinning no normal thread can interrupt (and whose wake-ups are as
	// late as anyone's on a virtual machine: the timer interrupt itself
	// comes late, tens of microseconds).
	initialSpin = 100 * time.Microsecond
	minSpin     = 10 * time.Microsecond
	maxSpin     = 2 * time.Millisecond
	maxSpinRT   = 300 * time.Microsecond
	// The loop spins without a break for at most l.maxBusy (maxBusy, or
	// maxBusyRT under SCHED_FIFO): then it halves l.spin and sleeps until
	// the deadline (minSpin at least), so that a spin grown to cover one long wake-up delay
	// shrinks again under dense traffic (which leaves no gap to sleep in),
	// and a real-time loop leaves its CPU to others every so often
	// instead of running into the kernel's real-time throttling.
	maxBusy   = 4 * time.Millisecond
	maxBusyRT = 300 * time.Microsecond
	// The loop spins at most maxSpinShare of its time, measured over
	// windows of spinWindow (see review). A loop whose deadlines come
	// closer together than its spin would otherwise poll all the time:
	// a CPU taken from the hosts' programs and the kernel's network
	// stacks, and a thread that the scheduler then treats as a CPU hog,
	// preempting it for milliseconds (a waking thread that has used
	// little CPU runs at once). Sleeping to each deadline costs a wake-up
	// delay, tens of microseconds, instead.
	spinWindow   = 20 * time.Millisecond
	maxSpinShare = 0.25
	// The loop's thread keeps its scheduling boost while it is busy less
	// than boostOffBusy of its time (see review).
	boostOffBusy = 0.6
	boostOnBusy  = 0.4
	// Under normal scheduling the loop's thread asks for the shortest
	// time slice Linux grants and the highest weight it may have (see
	// startNormal).
	loopSlice = 100 * time.Microsecond
	loopNice  = -20
	// initialReadCost is what the loop takes reading and classifying one
	// packet until it has measured it (l.readCost).
	initialReadCost = 5 * time.Microsecond
)

// review takes stock of the loop's last spinWindow, once one has passed,
// and reports whether it did.
//
// It keeps the loop's spinning within maxSpinShare of its time: it takes
// the time the loop spent in passes it began spinning rather than sleeping
// (l.st.spun) as a share of the window; above maxSpinShare it halves
// l.spinCap, the most of l.spin that idle uses, below half of it it
// doubles it again, up to l.maxSpin. l.spin itself goes on following the
// wake-up delays, so the loop spins as before once its deadlines are
// sparse again.
//
// And it decides whether the loop's thread has its scheduling boost
// (l.boost; see startNormal): not while this loop or the router's other
// one is busy (l.st.busy) more than boostOffBusy of its time (l.busy,
// Router.busyLoops), again once both are busy less than boostOnBusy. A
// loop that waits for deadlines most of the time must run the moment it
// wakes; a router that the traffic keeps busy sets the pace of its hosts'
// programs, which share its CPUs, and a boost of either loop would only
// take their time (measured: 7 to 15 % less TCP through an empty chain,
// whose up loop is busy and whose down loop, writing the ACKs, is not).
func (l *loop) review(now clock.Time) bool {
	w := &l.spinWin
	el := time.Duration(now - w.start)
	if el < spinWindow {
		return false
	}
	if w.start != 0 {
		switch share := float64(l.st.spun-w.spun) / float64(el); {
		case share > maxSpinShare:
			l.spinCap = max(l.spinCap/2, minSpin)
		case share < maxSpinShare/2:
			l.spinCap = min(2*l.spinCap, l.maxSpin)
		}
		was := l.busy
		switch busy := float64(l.st.busy-w.busy) / float64(el); {
		case busy > boostOffBusy:
			l.busy = true
		case busy < boostOnBusy:
			l.busy = false
		}
		if l.busy != was {
			if l.busy {
				l.r.busyLoops.Add(1)
			} else {
				l.r.busyLoops.Add(-1)
			}
		}
		l.boost = l.r.busyLoops.Load() == 0
	}
	*w = spinWindowStart{start: now, spun: l.st.spun, busy: l.st.busy}
	return true
}

// spinWindowStart is where the current window of review began: the time,
// and the loop's spinning and busy time then.
type spinWindowStart struct {
	start      clock.Time
	spun, busy int64
}

// adaptSpin takes the delay of one timed wake-up: the spin grows at once to
// cover it with a margin, and shrinks slowly (by 1/64 of the difference
// per wake-up) when wake-ups come early, so that it tracks the high
// percentiles of the wake-up delay rather than its mean.
func (l *loop) adaptSpin(late time.Duration) {
	want := late + late/4 + 5*time.Microsecond
	if want > l.spin {
		l.spin = want
	} else {
		l.spin -= (l.spin - want) / 64
	}
	l.spin = min(max(l.spin, minSpin), l.maxSpin)
}

// ingress is where a loop's packets come from.
type ingress interface {
	// read takes up to max packets that are ready now, without waiting,
	// and hands each to to.arrive; it returns how many it took and
	// whether it took all it was allowed to (so more may be waiting).
	read(max int, to arriver) (n int, more bool, err error)
	// wait waits until packets may be ready, the wake eventfd is
	// signalled or timeout passes; a negative timeout waits for ever.
	// event reports that it returned for input or the wake fd rather
	// than the timeout, woken that the wake fd is readable.
	wait(wake int, timeout time.Duration) (event, woken bool, err error)
	// close releases what the ingress holds (a reader goroutine).
	close()
}

// arriver is the classify step, which an ingress hands each packet to.
type arriver interface {
	// arrive takes packet p, which arrived at now (when it was read, or
	// the kernel's time of its arrival, earlier; with a virtio-net header
	// in front of it when vnet is set, and the index of its link-layer
	// header in the direction's l2Headers in l2, 0 for none), and reports
	// whether it kept p; if not, p still belongs to the ingress.
	arrive(now clock.Time, p *packet.Packet, vnet bool, l2 uint16) bool
	// waited records that a packet waited d in the ring in front of the
	// ingress, from its arrival to the read that took it (an ingress
	// that knows each packet's arrival calls it for each).
	waited(d time.Duration)
	// crossed records a frame that is not an IP packet, of n bytes with
	// its link-layer header, written to the other side at once with
	// errno (0 if the device took it).
	crossed(n int, errno syscall.Errno)
	// enough reports that the read should end here, packets waiting or
	// not (the read pacer's limit on super-packets).
	enough() bool
	// malformedRead counts n packets the device read but could not hand
	// over (tun.ErrMalformed).
	malformedRead(n uint64)
}

// egress is where a loop's packets go. write takes ownership of p, which
// could have left at deadline, and reports to to when it hands p to the
// device and how that went; it frees p, now or at flush. release calls
// flush after each pass.
type egress interface {
	write(p *packet.Packet, deadline clock.Time, to departures)
	flush(to departures)
}

// departures is what an egress reports to.
type departures interface {
	// now reads the router's clock.
	now() clock.Time
	// capture records p in the pcap stream as leaving at t.
	capture(p *packet.Packet, t clock.Time)
	// departed records that p, due at deadline, was handed to the device
	// at t, and the write's outcome (errno 0 if the device took it).
	departed(p *packet.Packet, deadline, t clock.Time, errno syscall.Errno)
	// coalesced records one USO super-packet of n datagrams.
	coalesced(n int)
	// merged records one TCP super-packet coalesced from n packets.
	merged(n int)
}

// loop is one direction: it reads from in, runs the link and writes to
// out, in that order (see the package documentation); st keeps what it
// counts. Everything but the fields marked otherwise belongs to the loop's
// goroutine while it runs.
type loop struct {
	r    *Router
	name string
	clk  *clock.Real

	// The path.
	in       ingress
	splitter *splitter
	dir      *link.Direction // the link; on a router of many hosts, path's bottleneck
	out      egress
	small    *packet.Pool
	large    *packet.Pool

	// A router of many hosts (Config.Clients and Servers) carries its
	// packets through path instead of dir, each entering by the port of
	// the host it was read from and leaving by the one routes gives its
	// destination, to outs[port]; port is the current packet's ports, set
	// by arrive for enqueue. With path nil, the loop is the router of
	// Client and Server.
	path   *link.Path
	routes routeTable
	outs   []egress
	port   [2]uint8
	hosts  *dirHosts

	// The chain and what it allows.
	env    qdisc.Env // the configured Env, to validate new chains
	chain  []qdisc.Spec
	qdiscs []qdisc.Qdisc   // the tree's discipline instances, root first, as placed
	placed []tcspec.Placed // where each listed one sits, as tc lists it
	owner  []int           // per instance of qdiscs, the listed one whose drops its drops are
	trace  bool
	vnet   bool // ingress and egress both carry virtio-net headers (VNet TUNs, packet sockets)
	outGSO bool // the egress takes every kind of super-packet the ingress hands over
	stamps bool // the ingress stamps arrivals with the kernel's time (packet sockets)
	whole  bool // super-packets enter the link whole

	st       dirStats
	userHook link.Hook
	ring     func() (RingCounters, error) // read on the caller's goroutine
	fatal    error

	// When to look at the link again.
	lastNext clock.Time // when the link said, at its last empty Dequeue, it next has a packet
	asked    clock.Time // the latest time the link was given, which it must not see go back
	// readCost is what reading and classifying one packet has cost
	// lately (a moving average), for readAllowance.
	readCost time.Duration
	// pacer keeps the loop from reading faster than it can release; held
	// records that the last pass read nothing for want of its credit, and
	// passEnd when the last pass ended.
	pacer   readPacer
	held    bool
	passEnd clock.Time
	// read is what the current pass has read, reset at its start.
	read passRead
	// arrived records an Enqueue since the last release. Only after one, or
	// once lastNext has come, can a packet be due; asking the link at other
	// times (the loop polls often near deadlines) would only make a
	// throttled tbf count an overlimit per poll, far more than tc shows.
	arrived bool

	// Waiting and spinning (loop_linux.go).
	spin      time.Duration
	maxSpin   time.Duration
	maxBusy   time.Duration
	busySince clock.Time      // when the loop last slept; 0 while it is not spinning
	spinCap   time.Duration   // the most of spin that idle uses (review)
	spinWin   spinWindowStart // review's current window
	boost     bool            // the thread should have its boost (review)
	boostNice int             // the nice value of the boost (startNormal)
	nice      int             // the thread's nice value now
	slice     time.Duration   // the time slice it asked for (0: the kernel's)
	busy      bool            // counted in r.busyLoops (review)
	spunFrom  clock.Time      // when idle last chose to spin; 0 once counted
	rtPrio    int
	fifo      bool          // the thread runs under SCHED_FIFO now
	onThread  bool          // run is running on the loop's thread
	cpu       time.Duration // the thread's CPU time when last measured
	tid       atomic.Int32  // the thread's id while run runs, 0 otherwise
	began     clock.Time    // when run began; ended when it ended (0 while it runs)
	ended     clock.Time

	// Control from other goroutines.
	wake     int         // eventfd: stop, requests, reader batches
	stopping atomic.Bool // set by stop
	running  bool        // guarded by r.mu
	reqMu    sync.Mutex
	reqs     []func()
	hasReq   atomic.Bool
}

// passRead is what one pass of the loop has read: bytes, and of them
// superBytes in supers GSO super-packets, of which it may read superQuota
// (unpaced: any number). readAllowance resets it as each pass starts.
type passRead struct {
	bytes, supers, superBytes, superQuota int
}

// newLoop prepares the loop of a direction from in to out or, with
// hosts, between its hosts (see dirHosts).
func newLoop(r *Router, cfg link.Config, in, out Device, hosts *dirHosts, ring func() (RingCounters, error), rtPrio int) (*loop, error) {
	l := &loop{
		r:        r,
		name:     cfg.Name,
		env:      cfg.Env,
		chain:    slices.Clone(cfg.Chain),
		trace:    cfg.Trace != nil,
		clk:      r.clk,
		small:    packet.NewPool(headroom+smallData, headroom),
		large:    packet.NewPool(headroom+largeData, headroom),
		splitter: newSplitter(),
		st:       newDirStats(cfg.Env.Framing),
		userHook: cfg.Hook,
		ring:     ring,
		spin:     initialSpin,
		readCost: initialReadCost,
		maxSpin:  maxSpin,
		spinCap:  maxSpin,
		boost:    true,
		maxBusy:  maxBusy,
		wake:     -1,
		rtPrio:   rtPrio,
	}
	if rtPrio > 0 {
		l.maxSpin, l.maxBusy = maxSpinRT, maxBusyRT
		l.spin, l.spinCap = maxSpinRT, maxSpinRT
	}
	l.env.Pool, l.env.Observer, l.env.Root = nil, nil, nil
	// Duplicates of any packet must fit, and they are rare: the large pool.
	cfg.Env.Pool = l.large
	cfg.PerFlow = false
	cfg.Hook = l
	var err error
	l.hosts = hosts
	many := hosts != nil && !hosts.direct
	if many {
		err = l.buildPath(cfg, hosts)
	} else {
		l.dir, err = link.New(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	l.resetChainState()
	if l.wake, err = newWake(); err != nil {
		return nil, err
	}
	if many {
		err = l.attachHosts(hosts)
	} else {
		err = l.attach(in, out)
	}
	if err != nil {
		closeWake(l.wake)
		return nil, err
	}
	l.whole = l.wholeAllowed()
	return l, nil
}

// wholeAllowed reports whether super-packets may enter the link whole:
// both devices carry them, the egress takes every kind the ingress may
// hand over, and no trace counts its opportunities' bytes per buffer.
func (l *loop) wholeAllowed() bool { return l.vnet && l.outGSO && !l.trace }

// resetChainState records the disciplines of the current tree, whose own
// counters start from zero: every one tc would list, the qdiscs under
// htb's classes and prio's bands too, with the handles tc's lines give
// them (tcspec.Layout).
//
// The defaults tc does not list (tbf's bfifo, a class's default pfifo)
// follow the listed ones in qdiscs: what they drop counts as their
// owner's own, as the kernel counts a child's drops in its parent's.
func (l *loop) resetChainState() {
	all, _ := tcspec.Layout(l.dir.Root())
	l.qdiscs, l.owner = l.qdiscs[:0], l.owner[:0]
	l.placed = l.placed[:0]
	for _, p := range all {
		if !p.Hidden {
			l.placed = append(l.placed, p)
		}
	}
	for _, p := range all {
		l.qdiscs = append(l.qdiscs, p.Qdisc)
		owner := len(l.owner)
		if p.Hidden {
			owner = slices.IndexFunc(l.placed, func(o tcspec.Placed) bool { return o.Qdisc == p.Owner })
		}
		l.owner = append(l.owner, owner)
	}
	l.st.resetChain(len(l.placed))
}

// pass is one iteration's work: release what is due, read what is
// waiting (taking it into the link), and release again what that made
// due. It returns how many packets it read and whether more may be
// waiting.
func (l *loop) pass() (int, bool, error) {
	start := l.clk.Now()
	if l.held && l.passEnd != 0 {
		l.st.held += int64(start - l.passEnd)
	}
	l.pacer.refill(start)
	out := l.release(start)
	at := l.clk.Now()
	l.pacer.update()
	k := l.readAllowance(at)
	l.held = k == 0
	n, more := 0, true
	var err error
	if k > 0 {
		n, more, err = l.in.read(k, l)
	}
	t := l.clk.Now()
	if n > 0 {
		l.readCost += (time.Duration(t-at)/time.Duration(n) - l.readCost) / 8
		l.pacer.charge(at, l.read.bytes, l.read.supers, l.read.superBytes, time.Duration(t-at))
		// A read that took all it was allowed left packets waiting
		// whatever limited it: the time until the next read is the
		// router's own delay on them.
		l.st.ring.read(at, n, more)
		l.st.maxLen = max(l.st.maxLen, l.inFlight())
		out += l.release(t)
	} else if k > 0 {
		l.st.ring.read(at, 0, more)
	}
	l.passEnd = l.clk.Now()
	if n > 0 || out > 0 {
		l.st.busy += int64(l.passEnd - start)
	}
	return n, more, err
}

// readAllowance returns how many packets a pass may read at now: none
// when the read pacer holds reads back (see readPacer), else a batch, or
// as many as fit before the link's next deadline at what a read has been
// costing (at least one), so that reading never holds a due release back
// by more than about one packet's read. It starts the pass's record of
// what it reads (l.read), with how many super-packets the pacer allows.
func (l *loop) readAllowance(now clock.Time) int {
	l.read = passRead{superQuota: unpaced}
	if l.inFlight() > 0 {
		// Only a link that holds packets has releases to come that
		// reads could crowd; one that released all it had keeps its
		// loop's time for what the next read brings.
		l.read.superQuota = l.pacer.allowance(now)
	}
	if l.read.superQuota == 0 {
		return 0
	}
	if l.lastNext == clock.Never {
		return readBatch
	}
	left := time.Duration(l.lastNext - now)
	if left >= readBatch*l.readCost {
		return readBatch
	}
	return max(1, int(left/max(l.readCost, 1)))
}

// inFlight returns the number of packets inside the link or path.
func (l *loop) inFlight() int {
	if l.path != nil {
		return l.path.Len()
	}
	return l.dir.Len()
}

// get returns a packet whose buffer holds n bytes of data.
func (l *loop) get(n int) *packet.Packet {
	if n <= smallData {
		return l.small.Get()
	}
	return l.large.Get()
}

// arrive implements arriver: the classify step. It takes p into the link
// whole (copied into a small buffer if it is small), or split into
// segments where the egress takes no super-packets.
func (l *loop) arrive(now clock.Time, p *packet.Packet, vnet bool, l2 uint16) bool {
	pkt := p.Bytes()
	var h packet.VirtioNetHdr
	buf, off := p.Buffer()
	if vnet {
		h, _ = packet.DecodeVirtioNetHdr(buf[off-tun.VNetHdrLen : off])
	}
	l.read.bytes += len(pkt)
	if h.GSOType != packet.GSONone {
		l.read.supers++
		l.read.superBytes += len(pkt)
	}
	// What is not an IP packet of its own length (bytes an AF_PACKET
	// socket put on the host's device) is no use to the receiving kernel,
	// which would refuse the write or drop it on input: count it here
	// instead of queueing it.
	if packet.CheckIPLength(pkt, h.GSOType != packet.GSONone) != nil {
		l.st.malformed++
		return false
	}
	if l.path != nil {
		out, ok := l.routes.lookup(pkt)
		if !ok {
			l.st.noRoute++
			return false
		}
		l.port = [2]uint8{p.InPort, uint8(out)}
	}
	g, err := inspect(pkt, h)
	if err != nil {
		// A super-packet whose header does not fit it can be neither
		// cut nor segmented.
		l.st.malformed++
		return false
	}
	flow := int32(-1)
	if t, err := packet.ParseTuple(pkt); err == nil {
		flow = l.st.flows.lookup(t)
	}
	if h.GSOType != packet.GSONone && !l.whole {
		// Split, also a super-packet of one segment: its header must
		// not go out with it.
		segs, err := l.splitter.split(pkt, h, g, l.get)
		if err != nil {
			l.st.malformed++
			return false
		}
		l.st.split++
		seg := g
		seg.segs = 1
		for _, q := range segs {
			seg.wire = q.Len()
			l.enqueue(now, q, seg, 0, false, l2, flow)
		}
		return false
	}
	if !l.whole && h.Flags&packet.VirtioNetHdrNeedsCsum != 0 {
		if packet.CompleteChecksum(pkt, h) != nil {
			l.st.malformed++
			return false
		}
	}
	keep := vnet && l.whole
	if len(pkt) <= smallData {
		q := l.small.Get()
		qb, qoff := q.Buffer()
		copy(qb[qoff-tun.VNetHdrLen:], buf[off-tun.VNetHdrLen:off+len(pkt)])
		q.SetLen(len(pkt))
		l.enqueue(now, q, g, int(h.GSOSize), keep, l2, flow)
		return false
	}
	l.enqueue(now, p, g, int(h.GSOSize), keep, l2, flow)
	return true
}

// enough implements arriver: the pass has read the super-packets the read
// pacer allowed.
func (l *loop) enough() bool {
	return l.read.superQuota != unpaced && l.read.supers >= l.read.superQuota
}

// malformedRead implements arriver.
func (l *loop) malformedRead(n uint64) { l.st.malformed += n }

// waited implements arriver.
func (l *loop) waited(d time.Duration) { l.st.ringWait.Add(int64(d)) }

// crossed implements arriver: frames that are no IP packet take no part
// in the link.
func (l *loop) crossed(n int, errno syscall.Errno) {
	l.st.nonIP.frames++
	l.st.nonIP.bytes += uint64(n)
	if errno != 0 {
		l.st.nonIP.refused++
	}
}

// enqueue is the link step: it offers q, described by g (and its GSO
// size), to the link; vnet says whether the virtio-net header in front of
// it describes it, l2 is its link-layer header's index.
func (l *loop) enqueue(now clock.Time, q *packet.Packet, g gsoInfo, gsoSize int, vnet bool, l2 uint16, flow int32) {
	q.Segs, q.SegSize, q.SegHdr, q.VNet = int32(g.segs), int32(gsoSize), int32(g.hdrLen), vnet
	q.Flow = -1
	q.Seq = -1
	if flow >= 0 {
		q.Seq = l.st.flows.arrivalSeq(flow, q.Bytes(), g)
	}
	q.Tag = makeTag(g.l4, l2, flow)
	l.asked = max(l.asked, now)
	if l.path != nil {
		l.path.Enqueue(now, int(l.port[0]), int(l.port[1]), q)
	} else {
		l.dir.Enqueue(now, q)
	}
	l.arrived = true
}

// release hands every packet that is due at now to the egress device, and
// returns how many it handed over.
//
// A loop that comes late asks the link first at the time the link said it
// would next have a packet, and only then at now: a token bucket credits
// the time since its last send only up to its burst, so asked at now
// alone it would lose the tokens of the loop's lateness beyond the burst
// (htb's default burst is one MTU, which at 10 Mbit/s lasts 70 µs beyond
// a full-size packet) and deliver less than its rate whenever the router
// falls behind. Asked at the due time first, it loses nothing for a
// lateness up to its burst's duration (1.3 ms for htb at 10 Mbit/s).
// Asking at every due time in turn, up to now, loses nothing at all, but
// was measured to shorten TCP's standing queue through tbf by about a
// packet under CPU load, against the kernel's tbf (whose own late timers
// lose tokens too), which calibrate's comparison does not allow. The
// packets leave at now, and their delay counts the lateness.
func (l *loop) release(now clock.Time) int {
	if !l.arrived && now < l.lastNext {
		return 0
	}
	l.arrived = false
	due := now
	if next := l.lastNext; next != clock.Never && next < now {
		due = max(next, l.asked)
	}
	n, bytes := 0, 0
	var began clock.Time
	for {
		var (
			p    *packet.Packet
			next clock.Time
			out  = l.out
		)
		if l.path == nil {
			p, next = l.dir.DequeueLate(due, now)
		} else {
			var port int
			p, port, next = l.path.DequeueLate(due, now)
			if p != nil {
				// The path's time is when the packet left its last
				// stage: its deadline. It arrived when it entered the
				// path (each stage restamps Arrival).
				out = l.outs[port]
				p.Arrival = p.PathArrival
			}
		}
		if p == nil {
			l.lastNext = next
			if due < now {
				due = now // what the due time let go has gone: now the rest
				continue
			}
			break
		}
		if n == 0 {
			began = l.clk.Now()
		}
		bytes += p.Len()
		if l.path == nil {
			next = l.deadline(p, due)
		}
		out.write(p, next, l)
		n++
	}
	l.asked = now // the loop ends having asked at now
	if l.path == nil {
		l.out.flush(l)
	} else {
		for _, o := range l.outs {
			o.flush(l)
		}
	}
	if n > 0 {
		l.pacer.releasedFor(bytes, time.Duration(l.clk.Now()-began))
	}
	return n
}

// deadline returns when p, released at now, could have left: the time the
// link last said it would next have a packet, its netem time to send, or
// its arrival, whichever is latest and not after now. For a packet behind
// another in a shaper's queue this may be earlier than the true deadline,
// so lateness errs on the high side.
func (l *loop) deadline(p *packet.Packet, now clock.Time) clock.Time {
	d := p.Arrival
	if n := l.lastNext; n != clock.Never && n > d && n <= now {
		d = n
	}
	if t := p.TimeToSend; t > d && t <= now {
		d = t
	}
	return d
}

// now implements departures.
func (l *loop) now() clock.Time { return l.clk.Now() }

// capture implements departures: it writes p to the pcap stream, if there
// is one.
func (l *loop) capture(p *packet.Packet, t clock.Time) {
	if l.r.pcap != nil {
		l.r.pcap.write(t, p.Bytes())
	}
}

// departed implements departures: the account step of a written packet.
func (l *loop) departed(p *packet.Packet, deadline, t clock.Time, errno syscall.Errno) {
	l.st.late.Add(int64(t - deadline))
	l.st.wrote(p, t, errno)
	if errno != 0 && l.path != nil {
		l.hosts.writeDrops[p.OutPort] += uint64(p.Segments())
	}
	switch errno {
	case syscall.EBADF, syscall.EBADFD, syscall.ENODEV:
		if l.fatal == nil {
			l.fatal = fmt.Errorf("router: %s: write: %w", l.name, errno)
		}
	}
}

// coalesced implements departures.
func (l *loop) coalesced(n int) {
	l.st.uso.writes++
	l.st.uso.datagrams += uint64(n)
}

// merged implements departures.
func (l *loop) merged(n int) {
	l.st.gro.writes++
	l.st.gro.packets += uint64(n)
}

// Event implements link.Hook: it keeps the segment accounting of drops,
// counts marks per flow, and passes every event on to the configured hook.
func (l *loop) Event(e *link.Event) {
	l.account(e)
	if l.userHook != nil {
		l.userHook.Event(e)
	}
}

// account keeps the segment accounting of a link's drops and the marks
// per flow.
func (l *loop) account(e *link.Event) {
	switch e.Kind {
	case link.Drop:
		qi := slices.Index(l.qdiscs, e.Qdisc)
		if qi >= 0 {
			qi = l.owner[qi]
		}
		l.st.dropped(e.Packet, qi, e.Reason)
	case link.Mark:
		l.st.marked(e.Packet)
	}
}

// request queues f to run on the loop's goroutine between iterations.
func (l *loop) request(f func()) {
	l.reqMu.Lock()
	l.reqs = append(l.reqs, f)
	l.reqMu.Unlock()
	l.hasReq.Store(true)
	signalWake(l.wake)
}

// serve runs the queued requests.
func (l *loop) serve() {
	l.reqMu.Lock()
	fs := l.reqs
	l.reqs = nil
	l.hasReq.Store(false)
	l.reqMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// stop asks the loop to end after its current iteration.
func (l *loop) stop() {
	l.stopping.Store(true)
	signalWake(l.wake)
}

// exit ends the loop's run: from now on requests run on their caller.
func (l *loop) exit() {
	if l.busy {
		l.busy = false
		l.r.busyLoops.Add(-1)
	}
	l.cpu, l.onThread = threadCPU(), false
	l.ended = l.clk.Now()
	l.r.mu.Lock()
	l.running = false
	l.r.mu.Unlock()
	l.serve()
}

// checkChain reports whether setChain(chain) would succeed, on the loop's
// goroutine (the check reads the current tree), without changing anything.
func (l *loop) checkChain(chain []qdisc.Spec) error {
	var err error
	l.r.inLoop(l, func() {
		if l.path != nil {
			err = l.path.CheckChain(link.Stage{Place: link.Bottleneck}, chain)
			return
		}
		err = l.dir.CheckChain(chain)
	})
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return nil
}

func (l *loop) setChain(chain []qdisc.Spec) (qdisc.ChainChange, error) {
	var (
		rep qdisc.ChainChange
		err error
	)
	l.r.inLoop(l, func() {
		if l.path != nil {
			rep, err = l.path.SetChain(link.Stage{Place: link.Bottleneck}, chain)
		} else {
			rep, err = l.dir.SetChain(chain)
		}
		if err != nil {
			return
		}
		l.chain = slices.Clone(chain)
		l.resetChainState()
		l.whole = l.wholeAllowed()
		l.lastNext = 0
		l.pacer.newChain()
	})
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return rep, nil
}

func (l *loop) close() {
	if l.in != nil {
		l.in.close()
	}
	closeWake(l.wake)
	l.wake = -1
}
