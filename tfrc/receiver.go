package tfrc

import (
	"math"
	"time"

	"wanlab/clock"
)

const (
	// NDupAck is how many packets with a higher sequence number must
	// arrive before a missing one counts as lost (RFC 5348 §5.1), so that
	// reordering of up to two places is not taken for loss.
	NDupAck = 3
	// FallbackRTT stands in for the sender's RTT estimate until a data
	// packet brings one: it paces the receiver's first feedback timer and
	// sizes the first loss interval if a loss comes before any estimate.
	// Linux's DCCP used the same value (DCCP_FALLBACK_RTT).
	FallbackRTT = 200 * time.Millisecond
	// recvWindow is how many sequence numbers below the highest one
	// received the receiver remembers, to wait out reordering and to tell
	// a late packet from a duplicate. A power of two.
	recvWindow = 1024
	// maxSeqJump bounds how far beyond the highest sequence number a data
	// packet may be. A sender whose packets all go unanswered halves its
	// rate every few round trips (§4.4), so no real flow loses this many
	// in a row; a larger jump is a corrupt or foreign packet.
	maxSeqJump = 1 << 20
)

// ReceiverStats are the receiver's counters and its current estimates.
type ReceiverStats struct {
	// Packets counts the data packets received, duplicates excluded, and
	// Bytes their lengths (headers included, the unit of X_recv).
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	// PayloadBytes is the application data delivered: Bytes without the
	// TFRC headers.
	PayloadBytes uint64 `json:"payload_bytes"`
	// Lost counts packets declared lost (RFC 5348 §5.1); Late those of
	// them that arrived after all (they are in Packets too, but the loss
	// history keeps them as lost, as §5.1 allows).
	Lost uint64 `json:"lost"`
	Late uint64 `json:"late"`
	// Duplicates counts packets received twice; Stale packets too old to
	// tell; Invalid packets whose sequence number jumped implausibly far.
	Duplicates uint64 `json:"duplicates"`
	Stale      uint64 `json:"stale"`
	Invalid    uint64 `json:"invalid"`
	// LossEvents counts loss events (§5.2).
	LossEvents uint64 `json:"loss_events"`
	// Feedbacks counts the feedback packets made.
	Feedbacks uint64 `json:"feedbacks"`
	// P is the loss event rate now, 1/I_mean (§5.4).
	P float64 `json:"p"`
	// XRecv is the receive rate reported in the latest feedback, bytes/s.
	XRecv float64 `json:"x_recv"`
	// RTT is the sender's estimate carried by the latest data packet.
	RTT time.Duration `json:"rtt_ns"`
}

type recvSlot struct {
	seq uint64
	at  clock.Time
	got bool
}

// Receiver is the receiving side of TFRC (RFC 5348 §5 and §6): it detects
// losses, groups them into loss events, keeps the loss intervals and the
// receive rate, and says when to send feedback and what it holds. The zero
// value is not usable; call NewReceiver.
type Receiver struct {
	ring    [recvWindow]recvSlot
	started bool
	// next is the lowest sequence number not yet resolved as received or
	// lost, hi the highest received; before is the last packet received
	// below next (S_before of §5.2) and beforeAt its arrival time.
	next, hi, before uint64
	beforeAt         clock.Time
	hist             lossHistory
	// rtt is the sender's estimate from the latest data packet.
	rtt time.Duration
	// meanSize is the mean packet size, s for §6.3.1.
	meanSize float64
	// The last data packet to arrive, which feedback echoes.
	lastSeq uint64
	lastTS  clock.Time
	lastAt  clock.Time
	// Feedback state: due says the next Poll sends feedback (dueAt is
	// since when); fbSent whether any was sent, lastFB when the latest
	// was, dataSinceFB whether data arrived since.
	due         bool
	dueAt       clock.Time
	fbSent      bool
	lastFB      clock.Time
	dataSinceFB bool
	// The receive rate is measured over [rateStart, now] from rateBytes.
	rateStart clock.Time
	rateBytes uint64
	xRecv     float64
	stats     ReceiverStats
}

// NewReceiver returns a receiver that has seen no packet. The first data
// packet to arrive initialises it (RFC 5348 §6.3).
func NewReceiver() *Receiver { return &Receiver{} }

func (r *Receiver) slot(seq uint64) *recvSlot { return &r.ring[seq%recvWindow] }

func (r *Receiver) received(seq uint64) bool {
	s := r.slot(seq)
	return s.seq == seq && s.got
}

// rm is R_m of §6.2, the RTT the receiver paces feedback with.
func (r *Receiver) rm() time.Duration {
	if r.rtt > 0 {
		return r.rtt
	}
	return FallbackRTT
}

// OnData records a data packet with header h and length size (header and
// payload, as sent) that arrived at now (RFC 5348 §6.1): it updates the
// loss history and makes feedback due if this is the first packet, if a
// loss event began, if p rose, or if the feedback timer expired while no
// data came.
func (r *Receiver) OnData(now clock.Time, h DataHeader, size int) {
	if size < 0 {
		size = 0
	}
	if !r.started {
		r.started = true
		r.next, r.hi = h.Seq, h.Seq
		r.before, r.beforeAt = h.Seq, now
		r.rateStart = now
		r.meanSize = float64(size)
		r.makeDue(now) // §6.3: feedback on the first packet
	}
	if h.RTT > 0 {
		r.rtt = h.RTT
	}
	switch {
	case h.Seq < r.next:
		// Resolved already: a duplicate, or a packet declared lost that
		// arrives after all. §5.1 lets the receiver refill the hole; this
		// one keeps the loss history as it is, the simpler choice.
		sl := r.slot(h.Seq)
		switch {
		case sl.seq == h.Seq && sl.got:
			r.stats.Duplicates++
			return
		case sl.seq == h.Seq:
			sl.got, sl.at = true, now
			r.stats.Late++
		default:
			r.stats.Stale++
			return
		}
	case h.Seq > r.hi:
		if h.Seq-r.hi > maxSeqJump {
			r.stats.Invalid++
			return
		}
		if h.Seq-r.next >= recvWindow {
			// The ring is about to forget sequence numbers that are
			// still unresolved: what has not come by now is lost.
			r.forceResolve(h.Seq-recvWindow+1, h.Seq, now)
		}
		from := r.hi + 1
		if h.Seq >= recvWindow && from < h.Seq-recvWindow+1 {
			from = h.Seq - recvWindow + 1
		}
		for s := from; s < h.Seq; s++ {
			*r.slot(s) = recvSlot{seq: s}
		}
		r.hi = h.Seq
	default: // next <= seq <= hi
		if r.received(h.Seq) {
			r.stats.Duplicates++
			return
		}
	}
	*r.slot(h.Seq) = recvSlot{seq: h.Seq, at: now, got: true}
	r.stats.Packets++
	r.stats.Bytes += uint64(size)
	if size > DataHeaderLen {
		r.stats.PayloadBytes += uint64(size - DataHeaderLen)
	}
	r.meanSize = 0.9*r.meanSize + 0.1*float64(size)
	r.rateBytes += uint64(size)
	r.dataSinceFB = true
	r.lastSeq, r.lastTS, r.lastAt = h.Seq, h.Timestamp, now

	pPrev := r.hist.p(r.hi)
	events := r.hist.events
	r.resolve(now)
	if r.hist.events != events || r.hist.p(r.hi) > pPrev {
		r.makeDue(now) // §6.1 step 3, and §6.2 on a new loss event
	}
	if r.fbSent && now >= r.lastFB.Add(r.rm()) {
		r.makeDue(now) // the timer expired while no data came (§6.2)
	}
}

func (r *Receiver) makeDue(now clock.Time) {
	if !r.due {
		r.due, r.dueAt = true, now
	}
}

// resolve declares lost every missing packet below which NDupAck packets
// have arrived, and moves next past what is settled.
func (r *Receiver) resolve(now clock.Time) {
	for r.next <= r.hi {
		if r.received(r.next) {
			r.before, r.beforeAt = r.next, r.slot(r.next).at
			r.next++
			continue
		}
		// A hole [next, a): a is the first packet received after it.
		a := r.next + 1
		for !r.received(a) {
			a++ // stops at hi at the latest
		}
		n := 0
		for s := a; s <= r.hi && n < NDupAck; s++ {
			if r.received(s) {
				n++
			}
		}
		if n < NDupAck {
			return
		}
		r.lose(r.next, a, r.slot(a).at, now)
		r.next = a
	}
}

// forceResolve settles every sequence number below limit: packets not
// received are lost. seq, arriving at now, is the packet that forces it.
func (r *Receiver) forceResolve(limit, seq uint64, now clock.Time) {
	for r.next < limit {
		if r.received(r.next) {
			r.before, r.beforeAt = r.next, r.slot(r.next).at
			r.next++
			continue
		}
		a, at := r.next+1, now
		for ; a <= r.hi; a++ {
			if r.received(a) {
				at = r.slot(a).at
				break
			}
		}
		if a > r.hi {
			a = seq
		}
		r.lose(r.next, a, at, now)
		r.next = a
	}
}

// lose records the packets [from, to) as lost; to arrived at toAt, and the
// packet before them is r.before. Each lost packet gets the arrival time
// interpolated between its neighbours (§5.2):
//
//	T_loss = T_before + (T_after - T_before)·(S_loss - S_before)/(S_after - S_before)
//
// and starts a new loss event if T_loss is more than one RTT after the
// start of the current one. The events within the hole are found by
// solving that inequality rather than by visiting every lost packet.
func (r *Receiver) lose(from, to uint64, toAt, now clock.Time) {
	r.stats.Lost += to - from
	sb, tb := r.before, float64(r.beforeAt)
	span := float64(to - sb)
	dt := float64(toAt) - tb
	rtt := float64(r.rtt)
	interp := func(s uint64) float64 { return tb + dt*float64(s-sb)/span }
	for s := from; s < to; {
		t := interp(s)
		if !r.hist.started() || t > float64(r.hist.openAt)+rtt {
			r.newEvent(s, t, now)
		}
		if dt <= 0 {
			return // every packet of the hole has the same time
		}
		// The first packet whose T_loss exceeds openAt + rtt.
		x := (float64(r.hist.openAt) + rtt - tb) * span / dt
		next := s + 1
		if x >= 0 && x < float64(to-sb) {
			if c := sb + uint64(math.Floor(x)) + 1; c > next {
				next = c
			}
		} else if x >= float64(to-sb) {
			return
		}
		s = next
	}
}

func (r *Receiver) newEvent(seq uint64, at float64, now clock.Time) {
	first := 0.0
	if !r.hist.started() {
		first = r.firstInterval(now)
	}
	r.hist.push(seq, int64(at), first)
	r.stats.LossEvents++
}

// firstInterval synthesises the first loss interval (RFC 5348 §6.3.1): the
// length 1/p for the p at which the equation gives the receive rate that
// the flow had reached, so that the sender continues at about that rate
// instead of starting over. The receive rate is measured since the last
// feedback (about an RTT), or the one last reported if that span is too
// short to measure, as Linux's CCID 3 did.
func (r *Receiver) firstInterval(now clock.Time) float64 {
	rtt := r.rm()
	x := r.xRecv
	if el := now.Sub(r.rateStart); el > 0 && r.rateBytes > 0 && (el >= rtt/4 || x == 0) {
		x = float64(r.rateBytes) / el.Seconds()
	}
	p := LossEventRateFor(r.meanSize, rtt, x)
	if p <= 0 {
		return 1
	}
	return 1 / p
}

// Poll returns the feedback to send now, if any (RFC 5348 §6.2). X_recv is
// the rate since the previous feedback; a feedback triggered sooner than
// half an RTT after the previous one repeats the previous X_recv (unless
// it is 0), since so short a span says little about the rate.
func (r *Receiver) Poll(now clock.Time) (Feedback, bool) {
	if !r.due && r.fbSent && r.dataSinceFB && now >= r.lastFB.Add(r.rm()) {
		r.makeDue(now)
	}
	if !r.due {
		return Feedback{}, false
	}
	el := now.Sub(r.rateStart)
	switch {
	case !r.fbSent:
		r.xRecv = 0 // §6.3: the first feedback reports X_recv = 0
		r.rateStart, r.rateBytes = now, 0
	case el > 0 && (el >= r.rm()/2 || r.xRecv == 0):
		r.xRecv = float64(r.rateBytes) / el.Seconds()
		r.rateStart, r.rateBytes = now, 0
	}
	f := Feedback{
		Seq:   r.lastSeq,
		Echo:  r.lastTS,
		Delay: now.Sub(r.lastAt),
		XRecv: r.xRecv,
		P:     r.hist.p(r.hi),
	}
	r.due, r.fbSent, r.lastFB, r.dataSinceFB = false, true, now, false
	r.stats.Feedbacks++
	return f, true
}

// Deadline returns when Poll next has feedback to give: a time not after
// now if it has some already, clock.Never if it waits for data.
func (r *Receiver) Deadline() clock.Time {
	switch {
	case r.due:
		return r.dueAt
	case r.fbSent && r.dataSinceFB:
		return r.lastFB.Add(r.rm())
	}
	return clock.Never
}

// LossEventRate returns p, the loss event rate now (0 before any loss).
func (r *Receiver) LossEventRate() float64 { return r.hist.p(r.hi) }

// Stats returns the receiver's counters and estimates.
func (r *Receiver) Stats() ReceiverStats {
	st := r.stats
	st.P = r.hist.p(r.hi)
	st.XRecv = r.xRecv
	st.RTT = r.rtt
	return st
}
