package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"wanlab/clock"
	"wanlab/stats"
)

// FloodConfig describes a constant-rate UDP stream, like Flent's
// udp_flood (iperf -u -b RATE -l SIZE).
type FloodConfig struct {
	// Label names the flow (for instance "UDP upload").
	Label string
	// Client and Server are the two hosts; the receiver listens on its
	// host's Addr, so a Down flood needs Client.Addr.
	Client, Server Host
	// Dir is Up when the client sends, Down when the server sends.
	Dir Direction
	// Rate is the sending rate in bits per second of UDP payload, as
	// iperf's -b counts it: each packet adds 28 bytes of headers on the
	// wire over IPv4 and 48 over IPv6.
	Rate int64
	// Size is each packet's UDP payload in bytes, at least 24 (the
	// flood's header); 0 means iperf2's 1470 over IPv4 and 1450 over
	// IPv6.
	Size int
	// TOS is the packets' TOS byte, ECN bits included.
	TOS int
	// Start and Stop are offsets from T0: packet i is due at
	// Start + i·Size·8/Rate while that is before Stop.
	Start, Stop time.Duration
}

// Flood is a constant-rate UDP stream. The sender keeps an absolute
// schedule: at each wake-up it sends every packet that is due, in batches
// of up to floodBatch per system call, so the rate holds over the run
// however late the wake-ups are. Each packet carries its number and send
// time; the receiver counts what arrives, by step and in total.
type Flood struct {
	cfg    FloodConfig
	cookie uint32

	// Set by Open and Start, read only afterwards.
	snd, rcv net.Conn // the sender's socket (connected) and the receiver's
	env      Env
	wg       sync.WaitGroup
	opened   bool

	issued     atomic.Uint64 // packets handed to the kernel (numbers below this exist)
	senderDone atomic.Bool

	// Written by the sender only; read after it has ended.
	refused             uint64
	firstSent, lastSent clock.Time

	mu     sync.Mutex // guards what follows
	closed bool
	err    string
	rx     floodRx
	drops  uint32 // the receiving socket's drops, read at Close
	res    FloodResult

	// Used only on the sampling goroutine.
	prev   floodSnap
	upTo   []uint64 // per step, the packets issued by its end
	ended  bool
	inited bool
}

// floodBatch is how many packets the sender hands to one sendmmsg.
const floodBatch = 64

// floodRxBuffer is the receiving socket's buffer (SO_RCVBUF): large
// enough that the receiving host itself does not drop what the path
// delivers while the receiver is descheduled for a few milliseconds.
const floodRxBuffer = 4 << 20

// floodRx is the receiver's running account.
type floodRx struct {
	log    seqLog
	jitter stats.Jitter
	bytes  uint64 // of distinct packets
	ce     uint64 // distinct packets that arrived marked CE
	step   owdAcc // packets since the last sample
	total  owdAcc
}

// owdAcc accumulates one-way delays.
type owdAcc struct {
	n             uint64
	sum, min, max time.Duration
}

func (a *owdAcc) add(d time.Duration) {
	if a.n == 0 || d < a.min {
		a.min = d
	}
	a.max = max(a.max, d)
	a.sum += d
	a.n++
}

func (a owdAcc) mean() time.Duration {
	if a.n == 0 {
		return 0
	}
	return a.sum / time.Duration(a.n)
}

// floodSnap is a sample's reading of the running counts.
type floodSnap struct {
	t               clock.Time
	issued          uint64
	unique, bytes   uint64
	reordered, dups uint64
	ce              uint64
	jitter          float64
	owd             owdAcc
}

// FloodResult is what a UDP flood recorded.
type FloodResult struct {
	FlowInfo
	// Dir, Rate, Size and TOS are the flow's configuration.
	Dir  Direction `json:"direction"`
	Rate int64     `json:"rate"`
	Size int       `json:"size"`
	TOS  int       `json:"tos"`
	// Steps are the grid points from the first at or after Start to the
	// first after the sender stopped at which nothing more arrived.
	Steps []FloodStep `json:"steps"`
	// Total covers the whole run.
	Total FloodTotal `json:"total"`
}

// FloodStep is one grid point's reading of a UDP flood. Its figures cover
// the interval since the previous step (since Start for the first one),
// except Jitter, which is the running estimate at T.
type FloodStep struct {
	K int        `json:"k"`
	T clock.Time `json:"t_ns"`
	// Interval is the time since the previous step: the received rate in
	// the step is ReceivedBytes·8/Interval.
	Interval time.Duration `json:"interval_ns"`
	// SentPackets were handed to the kernel in the interval.
	SentPackets uint64 `json:"sent_packets"`
	// LostPackets counts those of SentPackets that never arrived, known
	// only at the end of the run: a loss is charged to the step in which
	// the packet was sent.
	LostPackets uint64 `json:"lost_packets"`
	// ReceivedPackets and ReceivedBytes count the distinct packets (and
	// their UDP payload) that arrived in the interval; Reordered those of
	// them that arrived after a higher-numbered one (RFC 4737);
	// Duplicates the copies of packets already received.
	ReceivedPackets uint64 `json:"received_packets"`
	ReceivedBytes   uint64 `json:"received_bytes"`
	Reordered       uint64 `json:"reordered"`
	Duplicates      uint64 `json:"duplicates"`
	// CEMarked counts the distinct packets that arrived with ECN's
	// Congestion Experienced codepoint (RFC 3168): marks by an AQM on the
	// path, when the flow's TOS asks for ECN (ECT(0) is TOS bit 0x02).
	CEMarked uint64 `json:"ce_marked"`
	// Jitter is RFC 3550's interarrival jitter estimate at T.
	Jitter time.Duration `json:"jitter_ns"`
	// OWDMin, OWDMean and OWDMax are the one-way delays of the packets
	// that arrived in the interval; 0 if none did.
	OWDMin  time.Duration `json:"owd_min_ns"`
	OWDMean time.Duration `json:"owd_mean_ns"`
	OWDMax  time.Duration `json:"owd_max_ns"`
}

// FloodTotal sums up a UDP flood over the whole run.
type FloodTotal struct {
	// SentPackets and SentBytes were handed to the kernel; Refused of
	// them the sending kernel refused at once (no buffer space), and they
	// count as lost.
	SentPackets uint64 `json:"sent_packets"`
	SentBytes   uint64 `json:"sent_bytes"`
	Refused     uint64 `json:"refused"`
	// ReceivedPackets and ReceivedBytes count distinct packets received;
	// LostPackets = SentPackets - ReceivedPackets, and LossFraction is
	// LostPackets/SentPackets.
	ReceivedPackets uint64  `json:"received_packets"`
	ReceivedBytes   uint64  `json:"received_bytes"`
	LostPackets     uint64  `json:"lost_packets"`
	LossFraction    float64 `json:"loss_fraction"`
	// ReceiverDrops counts packets the receiving socket itself dropped
	// for want of buffer space: losses of the receiving host, not of the
	// path (included in LostPackets).
	ReceiverDrops uint64 `json:"receiver_drops"`
	// Reordered, Duplicates and CEMarked are as in FloodStep, over the
	// run.
	Reordered  uint64 `json:"reordered"`
	Duplicates uint64 `json:"duplicates"`
	CEMarked   uint64 `json:"ce_marked"`
	// Jitter is RFC 3550's estimate after the last packet.
	Jitter time.Duration `json:"jitter_ns"`
	// OWDMin, OWDMean and OWDMax are over every distinct packet.
	OWDMin  time.Duration `json:"owd_min_ns"`
	OWDMean time.Duration `json:"owd_mean_ns"`
	OWDMax  time.Duration `json:"owd_max_ns"`
	// SendSpan is how long the sender took: from its first packet to its
	// last plus one packet's time at Rate. SentRate and ReceivedRate are
	// SentBytes·8 and ReceivedBytes·8 over SendSpan, in bit/s: SentRate
	// falls short of Rate if the sender could not keep up.
	SendSpan     time.Duration `json:"send_span_ns"`
	SentRate     float64       `json:"sent_rate"`
	ReceivedRate float64       `json:"received_rate"`
}

// NewFlood checks cfg and returns the flow.
func NewFlood(cfg FloodConfig) (*Flood, error) {
	if err := CheckHosts(cfg.Label, cfg.Client, cfg.Server); err != nil {
		return nil, err
	}
	if cfg.Dir != Up && cfg.Dir != Down {
		return nil, fmt.Errorf("traffic: UDP flood %q: direction %d: use traffic.Up or traffic.Down", cfg.Label, int(cfg.Dir))
	}
	if cfg.Dir == Down && !cfg.Client.Addr.IsValid() {
		return nil, fmt.Errorf("traffic: UDP flood %q: a flood down needs the client's address to send to: set Client.Addr", cfg.Label)
	}
	if err := CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.Size == 0 {
		cfg.Size = 1470
		if cfg.Server.Addr.Is6() {
			cfg.Size = 1450
		}
	}
	if cfg.Size < floodHeaderLen || cfg.Size > maxUDPPayload {
		return nil, fmt.Errorf("traffic: UDP flood %q: size %d: give a UDP payload from %d to %d bytes", cfg.Label, cfg.Size, floodHeaderLen, maxUDPPayload)
	}
	if cfg.Rate <= 0 {
		return nil, fmt.Errorf("traffic: UDP flood %q: rate %d bit/s: give a positive rate (iperf's -b 100M is 100000000)", cfg.Label, cfg.Rate)
	}
	f := &Flood{cfg: cfg, cookie: rand.Uint32()}
	f.res = FloodResult{
		FlowInfo: FlowInfo{Label: cfg.Label, Kind: "udp_flood", Start: cfg.Start, Stop: cfg.Stop},
		Dir:      cfg.Dir, Rate: cfg.Rate, Size: cfg.Size, TOS: cfg.TOS,
	}
	return f, nil
}

// Label returns the flow's label.
func (f *Flood) Label() string { return f.cfg.Label }

// Window returns the flow's start and stop offsets.
func (f *Flood) Window() (start, stop time.Duration) { return f.cfg.Start, f.cfg.Stop }

// gap returns the time between two packets, in nanoseconds.
func (f *Flood) gap() float64 { return float64(f.cfg.Size) * 8 * 1e9 / float64(f.cfg.Rate) }

// Open makes the receiver's socket and the sender's, connected to it.
func (f *Flood) Open(ctx context.Context) error {
	if f.opened {
		return errors.New("traffic: a UDP flood runs once: make a new one for each run")
	}
	f.opened = true
	from, to := f.cfg.Client, f.cfg.Server
	if f.cfg.Dir == Down {
		from, to = to, from
	}
	network := udpNetwork(f.cfg.Server.Addr)
	rcv, err := to.Net.ListenPacket(ctx, network, to.listenAddr(), sockOpts{rcvbuf: floodRxBuffer, recvTOS: true}.control())
	if err != nil {
		return err
	}
	rc, ok := rcv.(net.Conn)
	if _, msg := rcv.(udpMsgConn); !ok || !msg {
		rcv.Close()
		return fmt.Errorf("traffic: the receiver's Net made a %T for %s: want a *net.UDPConn", rcv, network)
	}
	snd, err := from.Net.Dial(ctx, network, from.bindAddr(), rcv.LocalAddr().String(), sockOpts{tos: f.cfg.TOS}.control())
	if err != nil {
		rcv.Close()
		return err
	}
	f.snd, f.rcv = snd, rc
	return nil
}

// Start launches the receiver and the sender.
func (f *Flood) Start(ctx context.Context, env Env) {
	f.env = env
	f.wg.Add(2)
	go f.receive()
	go f.send(ctx)
}

func (f *Flood) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == "" && !f.closed {
		f.err = err.Error()
	}
}

// send keeps the schedule: packet i is due at T0 + Start + i·gap.
func (f *Flood) send(ctx context.Context) {
	defer f.wg.Done()
	defer f.senderDone.Store(true)
	bufs := make([][]byte, floodBatch)
	for i := range bufs {
		bufs[i] = make([]byte, f.cfg.Size)
	}
	bw, err := newBatchWriter(f.snd, bufs)
	if err != nil {
		f.fail(err)
		return
	}
	clk, w := f.env.Clock, NewWaiter(f.env.Clock)
	start, stop, gap := f.env.At(f.cfg.Start), f.env.At(f.cfg.Stop), f.gap()
	due := func(i uint64) clock.Time { return start + clock.Time(math.Round(float64(i)*gap)) }
	var i uint64
	for {
		next := due(i)
		if next >= stop || !w.Until(ctx, next) {
			return
		}
		now := clk.Now()
		n := 0
		for n < floodBatch {
			d := due(i + uint64(n))
			if d > now || d >= stop {
				break
			}
			putFlood(bufs[n], f.cookie, i+uint64(n), now)
			n++
		}
		if i == 0 {
			f.firstSent = now
		}
		f.lastSent = now
		// Publish the numbers before sending: on loopback the receiver
		// may read a packet before sendmmsg returns.
		f.issued.Store(i + uint64(n))
		refused, err := bw.write(n)
		f.refused += uint64(refused)
		if err != nil {
			if !errClosed(err) {
				f.fail(fmt.Errorf("send: %w", err))
			}
			return
		}
		i += uint64(n)
	}
}

// receive counts what arrives.
func (f *Flood) receive() {
	defer f.wg.Done()
	buf := make([]byte, maxUDPPayload)
	oob := make([]byte, 128)
	clk := f.env.Clock
	c := f.rcv.(udpMsgConn)
	for {
		n, oobn, _, _, err := c.ReadMsgUDPAddrPort(buf, oob)
		now := clk.Now()
		if err != nil {
			if errClosed(err) {
				return
			}
			f.fail(fmt.Errorf("receive: %w", err))
			return
		}
		seq, sent, ok := readFlood(buf[:n], f.cookie)
		if !ok || seq >= f.issued.Load() {
			continue
		}
		f.mu.Lock()
		f.rx.add(seq, n, sent, now, ReceivedTOS(oob[:oobn])&3 == 3)
		f.mu.Unlock()
	}
}

// add counts packet seq of n bytes, sent at sent and received at now,
// marked CE or not.
func (r *floodRx) add(seq uint64, n int, sent, now clock.Time, ce bool) {
	if r.log.add(seq) == duplicate {
		return
	}
	owd := now.Sub(sent)
	r.bytes += uint64(n)
	if ce {
		r.ce++
	}
	r.jitter.Add(float64(owd))
	r.step.add(owd)
	r.total.add(owd)
}

// Sample records the step since the previous sample.
func (f *Flood) Sample(k int, t clock.Time) {
	if f.ended || f.env.Grid(k) < f.env.At(f.cfg.Start) {
		return
	}
	if !f.inited {
		f.prev.t = f.env.At(f.cfg.Start)
		f.inited = true
	}
	done := f.senderDone.Load()
	s := floodSnap{t: t, issued: f.issued.Load()}
	f.mu.Lock()
	s.unique, s.bytes = f.rx.log.unique, f.rx.bytes
	s.reordered, s.dups, s.ce = f.rx.log.reordered, f.rx.log.dups, f.rx.ce
	s.jitter, s.owd = f.rx.jitter.Value(), f.rx.step
	f.rx.step = owdAcc{}
	p := f.prev
	step := FloodStep{
		K: k, T: t, Interval: t.Sub(p.t),
		SentPackets:     s.issued - p.issued,
		ReceivedPackets: s.unique - p.unique,
		ReceivedBytes:   s.bytes - p.bytes,
		Reordered:       s.reordered - p.reordered,
		Duplicates:      s.dups - p.dups,
		CEMarked:        s.ce - p.ce,
		Jitter:          time.Duration(math.Round(s.jitter)),
		OWDMin:          s.owd.min,
		OWDMean:         s.owd.mean(),
		OWDMax:          s.owd.max,
	}
	f.res.Steps = append(f.res.Steps, step)
	f.mu.Unlock()
	f.upTo = append(f.upTo, s.issued)
	f.prev = s
	// After the sender has stopped, the first step in which nothing
	// arrives is the last: what is still on its way is the path's loss.
	f.ended = done && step.ReceivedPackets == 0 && step.Duplicates == 0
}

// Close stops the flow, closes its sockets and settles the losses.
func (f *Flood) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	if f.snd == nil {
		return
	}
	drops, derr := socketDrops(f.rcv)
	f.snd.Close()
	f.rcv.Close()
	f.wg.Wait()

	f.mu.Lock()
	defer f.mu.Unlock()
	if derr != nil && f.err == "" {
		f.err = derr.Error()
	}
	f.drops = drops
	var from uint64
	for i := range f.res.Steps {
		f.res.Steps[i].LostPackets = f.rx.log.missing(from, f.upTo[i])
		from = f.upTo[i]
	}
	tot := &f.res.Total
	issued := f.issued.Load()
	tot.SentPackets, tot.SentBytes, tot.Refused = issued, issued*uint64(f.cfg.Size), f.refused
	tot.ReceivedPackets, tot.ReceivedBytes = f.rx.log.unique, f.rx.bytes
	tot.LostPackets = issued - f.rx.log.unique
	if issued > 0 {
		tot.LossFraction = float64(tot.LostPackets) / float64(issued)
		tot.SendSpan = f.lastSent.Sub(f.firstSent) + time.Duration(math.Round(f.gap()))
		tot.SentRate = float64(tot.SentBytes) * 8 / tot.SendSpan.Seconds()
		tot.ReceivedRate = float64(tot.ReceivedBytes) * 8 / tot.SendSpan.Seconds()
	}
	tot.ReceiverDrops = uint64(f.drops)
	tot.Reordered, tot.Duplicates, tot.CEMarked = f.rx.log.reordered, f.rx.log.dups, f.rx.ce
	tot.Jitter = time.Duration(math.Round(f.rx.jitter.Value()))
	tot.OWDMin, tot.OWDMean, tot.OWDMax = f.rx.total.min, f.rx.total.mean(), f.rx.total.max
}

// Result returns what the flow recorded.
func (f *Flood) Result() FlowResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.res
	r.Error = f.err
	r.Steps = append([]FloodStep(nil), f.res.Steps...)
	return &r
}
