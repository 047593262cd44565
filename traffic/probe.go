package traffic

import (
	"fmt"
	"sync"
	"time"

	"wanlab/clock"
)

// A probe is declared lost when no reply has come LossTimeoutRTTs times
// the largest RTT its stream has seen after it was sent, or LossTimeoutMin
// if that is longer; the grid points check, and so a loss is declared up
// to one step after its deadline. Four RTTs follow RTT growth under load
// (bufferbloat) without declaring a slow probe lost; the one-second floor
// keeps a stream whose RTT is tiny from declaring losses at the first
// scheduling hiccup. Probes still unanswered when the run ends are lost
// too, marked LostAtEnd. A reply that comes after its probe was declared
// lost leaves it lost and marks it Late.
const (
	LossTimeoutMin  = time.Second
	LossTimeoutRTTs = 4
)

// LossDirection says where a lost probe was lost.
type LossDirection string

const (
	// LostUp: the server never received the probe.
	LostUp LossDirection = "up"
	// LostDown: the server received the probe and replied, but the reply
	// never came back.
	LostDown LossDirection = "down"
	// LostUnknown: the direction cannot be known (ICMP: the peer's kernel
	// answers, and it keeps no record).
	LostUnknown LossDirection = "unknown"
	// NotSent: the client's own kernel refused to send the probe (for
	// instance no route); it never left the host.
	NotSent LossDirection = "not_sent"
)

// Probe is one latency probe. Times are readings of the run's clock; the
// one-way delays are true one-way delays, because the client and the
// server read the same monotonic clock.
type Probe struct {
	// Seq numbers the stream's probes from 0.
	Seq uint32 `json:"seq"`
	// Sent is when the client sent it.
	Sent clock.Time `json:"sent_ns"`
	// RTT is the round trip as the client saw it: from its send to its
	// receipt of the reply, the server's turnaround included (as ping
	// measures).
	RTT time.Duration `json:"rtt_ns"`
	// OWDUp is the server's receipt minus the client's send, OWDDown the
	// client's receipt minus the server's send, and ServerTime the
	// server's turnaround (its send minus its receipt), so that
	// RTT = OWDUp + ServerTime + OWDDown. UDP probes only.
	OWDUp      time.Duration `json:"owd_up_ns"`
	OWDDown    time.Duration `json:"owd_down_ns"`
	ServerTime time.Duration `json:"server_time_ns"`
	// TOSUp is the TOS byte the probe arrived with at the server (UDP
	// only) and TOSDown the one its reply arrived with at the client;
	// -1 when unknown. A path that re-marks DSCP shows here.
	TOSUp   int `json:"tos_up"`
	TOSDown int `json:"tos_down"`
	// Lost says the probe was declared lost, LostDir in which direction,
	// LostAtEnd that it was still unanswered when the run ended (it may
	// have been on its way), and Late that its reply came after it was
	// declared lost.
	Lost      bool          `json:"lost"`
	LostDir   LossDirection `json:"lost_dir,omitempty"`
	LostAtEnd bool          `json:"lost_at_end,omitempty"`
	Late      bool          `json:"late,omitempty"`
}

// ProbeResult is what a UDP or ICMP probe stream recorded.
type ProbeResult struct {
	FlowInfo
	// Interval, Size and TOS are the stream's: the time between probes,
	// the payload size (UDP payload; ICMP echo data) and the TOS byte.
	Interval time.Duration `json:"interval_ns"`
	Size     int           `json:"size"`
	TOS      int           `json:"tos"`
	// OneWay says whether the probes carry one-way delays (UDP).
	OneWay bool `json:"one_way"`
	// Probes are every probe sent, in order of Seq.
	Probes []Probe `json:"probes"`
	// Answered counts probes whose reply came in time; LostUp, LostDown,
	// LostUnknown and NotSent count the lost ones by direction;
	// Duplicates counts replies that came more than once; Late counts
	// replies to probes already declared lost.
	Answered    int `json:"answered"`
	LostUp      int `json:"lost_up"`
	LostDown    int `json:"lost_down"`
	LostUnknown int `json:"lost_unknown"`
	NotSent     int `json:"not_sent"`
	Duplicates  int `json:"duplicates"`
	Late        int `json:"late"`
}

// probeStream is what the UDP and ICMP probe streams share besides their
// sockets: the book of their probes, their goroutines, and the first
// error those met.
type probeStream struct {
	book probeBook
	wg   sync.WaitGroup

	mu     sync.Mutex // guards what follows
	closed bool
	err    string
}

// fail records the first error of the stream's goroutines; errors once
// the stream is closing are the closing's doing, and are not recorded.
func (s *probeStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == "" && !s.closed {
		s.err = err.Error()
	}
}

// settleSend settles the send of probe seq, which err ended (nil if it went):
// a refused probe is recorded as not sent and its error as the stream's,
// what names the probe in that error ("echo request"). It returns false
// when the socket is closed, and the stream must stop sending.
func (s *probeStream) settleSend(seq uint32, what string, err error) bool {
	if err == nil {
		return true
	}
	if errClosed(err) {
		return false
	}
	s.book.notSent(seq)
	s.fail(fmt.Errorf("send %s %d: %w", what, seq, err))
	return true
}

// close marks the stream closed, closes its sockets with closeSockets,
// waits for its goroutines and declares lost every probe still
// unanswered.
func (s *probeStream) close(closeSockets func()) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	closeSockets()
	s.wg.Wait()
	s.book.end()
}

// result completes r, which describes the stream, with its error and its
// probes.
func (s *probeStream) result(r *ProbeResult) *ProbeResult {
	s.mu.Lock()
	r.Error = s.err
	s.mu.Unlock()
	s.book.fill(r)
	return r
}

// probeBook records a probe stream: the client's sends and replies, and
// (UDP) which probes the server received, so that a loss has a direction.
// All methods are safe for concurrent use.
type probeBook struct {
	mu     sync.Mutex
	probes []Probe
	state  []probeState
	open   int // probes before this one are all settled (answered or lost)
	maxRTT time.Duration
	dups   int
	oneWay bool // the server's receipts are known (UDP), so losses have a direction
}

type probeState uint8

const (
	probeAnswered probeState = 1 << iota
	probeServerGot
)

// sent records the send of the next probe at t and returns its Seq.
func (b *probeBook) sent(t clock.Time) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	seq := uint32(len(b.probes))
	b.probes = append(b.probes, Probe{Seq: seq, Sent: t, TOSUp: -1, TOSDown: -1})
	b.state = append(b.state, 0)
	return seq
}

// notSent records that the kernel refused probe seq.
func (b *probeBook) notSent(seq uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := &b.probes[seq]
	if !p.Lost && b.state[seq]&probeAnswered == 0 {
		p.Lost, p.LostDir = true, NotSent
	}
}

// serverGot records that the server received probe seq with TOS tos (-1
// if unknown). It reports false for a Seq the client never sent.
func (b *probeBook) serverGot(seq uint32, tos int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int(seq) >= len(b.probes) {
		return false
	}
	if b.state[seq]&probeServerGot == 0 {
		b.state[seq] |= probeServerGot
		b.probes[seq].TOSUp = tos
	}
	return true
}

// reply records the reply to probe seq, received at t. For UDP, srvRecv
// and srvSend are the server's times; for ICMP both are 0 and the probe
// has only its RTT. tos is the reply's TOS byte, -1 if unknown.
func (b *probeBook) reply(seq uint32, t, srvRecv, srvSend clock.Time, tos int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int(seq) >= len(b.probes) {
		return
	}
	p := &b.probes[seq]
	switch {
	case b.state[seq]&probeAnswered != 0:
		b.dups++
		return
	case p.Lost:
		p.Late = true
		return
	}
	b.state[seq] |= probeAnswered
	p.RTT = t.Sub(p.Sent)
	if srvRecv != 0 || srvSend != 0 {
		p.OWDUp = srvRecv.Sub(p.Sent)
		p.OWDDown = t.Sub(srvSend)
		p.ServerTime = srvSend.Sub(srvRecv)
	}
	p.TOSDown = tos
	b.maxRTT = max(b.maxRTT, p.RTT)
}

// timeout returns how long an unanswered probe waits before it is lost.
func (b *probeBook) timeout() time.Duration {
	return max(LossTimeoutMin, LossTimeoutRTTs*b.maxRTT)
}

// expire declares lost every unanswered probe whose deadline is at or
// before now.
func (b *probeBook) expire(now clock.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle(now.Add(-b.timeout()), false)
}

// end declares lost every probe still unanswered: the run is over.
func (b *probeBook) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle(clock.Never, true)
}

// settle declares lost the unanswered probes sent at or before sentBy.
func (b *probeBook) settle(sentBy clock.Time, atEnd bool) {
	i := b.open
	for ; i < len(b.probes); i++ {
		p := &b.probes[i]
		if p.Lost || b.state[i]&probeAnswered != 0 {
			continue
		}
		if p.Sent > sentBy {
			break
		}
		p.Lost, p.LostAtEnd = true, atEnd
		switch {
		case !b.oneWay:
			p.LostDir = LostUnknown
		case b.state[i]&probeServerGot != 0:
			p.LostDir = LostDown
		default:
			p.LostDir = LostUp
		}
	}
	// Everything before i is settled now; later probes may be settled
	// already (answered out of order) but are checked again next time.
	b.open = i
}

// fill copies the probes and their counts into r.
func (b *probeBook) fill(r *ProbeResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r.Probes = append([]Probe(nil), b.probes...)
	r.Duplicates = b.dups
	for i, p := range r.Probes {
		if p.Late {
			r.Late++
		}
		if !p.Lost {
			if b.state[i]&probeAnswered != 0 {
				r.Answered++
			}
			continue
		}
		switch p.LostDir {
		case LostUp:
			r.LostUp++
		case LostDown:
			r.LostDown++
		case LostUnknown:
			r.LostUnknown++
		case NotSent:
			r.NotSent++
		}
	}
}
