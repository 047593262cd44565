// Package udpflow is the lifecycle of a bulk flow over one of wanlab's own
// datagram transports (TFRC's, package traffic/tfrcflow, and the scalable
// sender's, package traffic/scalableflow), the same over both: it has no
// connection, so the receiver's socket is bound before the run starts and
// answers whoever sends it data; the receiver runs from T0 to the end of
// the run, so that the data still in flight at Stop is counted; the sender
// runs from Start to Stop; and both sides are sampled at each grid point
// from the first one at or after Start.
//
// A Transport supplies the rest: what to make of the two sockets, how to
// read both sides into a sample, and the result's own type. It plays the
// part for these transports that traffic.BulkTransport plays for the
// stream transports, whose lifecycle (connect, stream, FIN) theirs is not.
package udpflow

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/traffic"
)

// Spec is what the lifecycle needs of a flow's configuration.
type Spec struct {
	// Pkg begins the flow's errors, for instance "tfrcflow"; Name says
	// what the flow is in the error of a second Open, for instance "a
	// TFRC flow".
	Pkg, Name string
	// Label and Kind are the result's FlowInfo.
	Label, Kind string
	// Client and Server are the two hosts. The receiving host (Server
	// for Up, Client for Down) needs an address, which the sender sends
	// to; the sending host's socket is bound to its address if it has
	// one.
	Client, Server traffic.Host
	// Dir is traffic.Up when the client sends, traffic.Down when the
	// server sends.
	Dir traffic.Direction
	// TOS is the flow's TOS byte; New checks it. Control, if not nil, is
	// applied to both sockets as they are made (TFRC sets the TOS byte
	// that way; the scalable sender sets its own on the sockets).
	TOS     int
	Control traffic.Control
	// Start and Stop are offsets from T0: the sender runs from Start to
	// Stop.
	Start, Stop time.Duration
}

// Runner is one side of a transport, as tfrcudp's and scalableudp's
// Sender and Receiver are.
type Runner interface {
	// Run runs the side until ctx ends, then releases its socket and
	// whatever else it holds, and returns with every goroutine it started
	// ended; on a context that has already ended it only releases. It
	// returns nil when ctx ended it.
	Run(ctx context.Context) error
}

// Ends are what a Transport makes of the two sockets.
type Ends struct {
	Sender, Receiver Runner
	// App, if not nil, is the sending application, run beside Sender
	// from Start to Stop (TFRC's sender takes its data from one; the
	// scalable sender makes its own). It returns nil when its context
	// ends.
	App func(ctx context.Context) error
}

// Transport is the part of a flow that depends on its transport. The
// flow calls Open before the run, Sample on the goroutine that drives the
// run, Delivered once the flow's goroutines have ended, and Result last.
type Transport[S any] interface {
	// Open makes the sender on snd, which sends to rcv's address, and the
	// receiver on rcv; they own their sockets from then on. If Open fails
	// it must leave nothing open but the two sockets, which the flow then
	// closes (closing one twice is harmless).
	Open(snd, rcv net.PacketConn) (Ends, error)
	// Sample reads both sides at grid point k, read at time t.
	Sample(k int, t clock.Time) S
	// Delivered returns the application bytes the sender sent and those
	// the receiver received.
	Delivered() (sent, received int64)
	// Result makes the flow's result from what the flow recorded.
	Result(r Record[S]) traffic.FlowResult
}

// Record is what the lifecycle records of a flow, for its transport's
// result.
type Record[S any] struct {
	Info traffic.FlowInfo
	// Sender and Receiver are the UDP sockets the data goes from and to.
	Sender, Receiver netip.AddrPort
	// StartedAt is when the sender started, StoppedAt when it stopped (0
	// if it never started).
	StartedAt, StoppedAt clock.Time
	// SentBytes is the application data the sender sent, ReceivedBytes
	// the application data the receiver received, at the end of the run.
	SentBytes, ReceivedBytes int64
	// Samples are the readings at the grid points from the first one at
	// or after Start to the end of the run.
	Samples []S
}

// Flow is a bulk flow over a datagram transport: a traffic.Flow. A
// transport's flow type embeds *Flow.
type Flow[S any] struct {
	spec             Spec
	tr               Transport[S]
	network          string // "udp4" or "udp6"
	sndHost, rcvHost traffic.Host

	// Set by Open and Start, read only afterwards.
	ends   Ends
	env    traffic.Env
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex // guards rec
	rec Record[S]

	// Used only on the sampling goroutine. ready says that Open
	// succeeded.
	opened, ready, started, closed bool
}

var _ traffic.Flow = (*Flow[struct{}])(nil)

// New checks spec and returns the flow of spec over tr.
func New[S any](spec Spec, tr Transport[S]) (*Flow[S], error) {
	if spec.Client.Net == nil || spec.Server.Net == nil {
		return nil, fmt.Errorf("%s: flow %q: both hosts need a Net (traffic.Local{} for this process's namespace)", spec.Pkg, spec.Label)
	}
	if spec.Dir != traffic.Up && spec.Dir != traffic.Down {
		return nil, fmt.Errorf("%s: flow %q: direction %d: use traffic.Up or traffic.Down", spec.Pkg, spec.Label, int(spec.Dir))
	}
	f := &Flow[S]{spec: spec, tr: tr, sndHost: spec.Client, rcvHost: spec.Server}
	if spec.Dir == traffic.Down {
		f.sndHost, f.rcvHost = spec.Server, spec.Client
	}
	if !f.rcvHost.Addr.IsValid() {
		return nil, fmt.Errorf("%s: flow %q: the receiving host (the %s) has no address for the sender to send to: set its Addr", spec.Pkg, spec.Label, map[traffic.Direction]string{traffic.Up: "server", traffic.Down: "client"}[spec.Dir])
	}
	if a := f.sndHost.Addr; a.IsValid() && a.Is4() != f.rcvHost.Addr.Is4() {
		return nil, fmt.Errorf("%s: flow %q: sender address %v and receiver address %v are of different IP versions: use two IPv4 or two IPv6 addresses", spec.Pkg, spec.Label, a, f.rcvHost.Addr)
	}
	if err := traffic.CheckTOS(spec.Label, spec.TOS); err != nil {
		return nil, err
	}
	f.network = "udp6"
	if f.rcvHost.Addr.Is4() {
		f.network = "udp4"
	}
	f.rec.Info = traffic.FlowInfo{Label: spec.Label, Kind: spec.Kind, Start: spec.Start, Stop: spec.Stop}
	return f, nil
}

// Label returns the flow's label.
func (f *Flow[S]) Label() string { return f.spec.Label }

// Window returns the flow's start and stop offsets.
func (f *Flow[S]) Window() (start, stop time.Duration) { return f.spec.Start, f.spec.Stop }

// Open makes both sockets and the transport's two sides on them, so that
// a bad address or option is an error before the run starts.
func (f *Flow[S]) Open(ctx context.Context) (err error) {
	if f.opened {
		return fmt.Errorf("%s: %s runs once: make a new one for each run", f.spec.Pkg, f.spec.Name)
	}
	f.opened = true
	var sndConn, rcvConn net.PacketConn
	defer func() {
		if err != nil {
			for _, c := range []net.PacketConn{sndConn, rcvConn} {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	rcvConn, err = f.rcvHost.Net.ListenPacket(ctx, f.network, netip.AddrPortFrom(f.rcvHost.Addr, 0).String(), f.spec.Control)
	if err != nil {
		return fmt.Errorf("%s: receiver socket: %w", f.spec.Pkg, err)
	}
	sndAddr := ":0"
	if f.sndHost.Addr.IsValid() {
		sndAddr = netip.AddrPortFrom(f.sndHost.Addr, 0).String()
	}
	sndConn, err = f.sndHost.Net.ListenPacket(ctx, f.network, sndAddr, f.spec.Control)
	if err != nil {
		return fmt.Errorf("%s: sender socket: %w", f.spec.Pkg, err)
	}
	if f.ends, err = f.tr.Open(sndConn, rcvConn); err != nil {
		return fmt.Errorf("%s: flow %q: %w", f.spec.Pkg, f.spec.Label, err)
	}
	f.rec.Sender = traffic.AddrPort(sndConn.LocalAddr())
	f.rec.Receiver = traffic.AddrPort(rcvConn.LocalAddr())
	f.ready = true
	return nil
}

// Start launches the receiver at once and the sender at Start. Both end
// when ctx ends, at the latest.
func (f *Flow[S]) Start(ctx context.Context, env traffic.Env) {
	f.env = env
	f.started = true
	fctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		if err := f.ends.Receiver.Run(fctx); err != nil {
			f.fail(fmt.Errorf("receiver: %w", err))
		}
	}()
	go func() {
		defer f.wg.Done()
		f.send(fctx)
	}()
}

// send runs the sender, and the application if there is one, from Start
// to Stop.
func (f *Flow[S]) send(ctx context.Context) {
	clk := f.env.Clock
	if !traffic.SleepUntil(ctx, clk, f.env.At(f.spec.Start)) {
		f.ends.Sender.Run(ctx) // releases the sender's socket and the rest it holds
		return
	}
	sctx, stop := context.WithTimeout(ctx, f.env.At(f.spec.Stop).Sub(clk.Now()))
	defer stop()
	f.mu.Lock()
	f.rec.StartedAt = clk.Now()
	f.mu.Unlock()
	var app chan error
	if f.ends.App != nil {
		app = make(chan error, 1)
		go func() { app <- f.ends.App(sctx) }()
	}
	err := f.ends.Sender.Run(sctx)
	var aerr error
	if app != nil {
		aerr = <-app
	}
	f.mu.Lock()
	f.rec.StoppedAt = clk.Now()
	f.mu.Unlock()
	if err != nil {
		f.fail(fmt.Errorf("sender: %w", err))
	} else if aerr != nil {
		f.fail(fmt.Errorf("application: %w", aerr))
	}
}

// fail records the first error of the flow's goroutines.
func (f *Flow[S]) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rec.Info.Error == "" {
		f.rec.Info.Error = err.Error()
	}
}

// Sample reads both sides from the first grid point at or after Start.
func (f *Flow[S]) Sample(k int, t clock.Time) {
	if f.env.Grid(k) < f.env.At(f.spec.Start) {
		return
	}
	s := f.tr.Sample(k, t)
	f.mu.Lock()
	f.rec.Samples = append(f.rec.Samples, s)
	f.mu.Unlock()
}

// Close stops both sides, waits for their goroutines and closes the
// sockets.
func (f *Flow[S]) Close() {
	if f.closed || !f.ready {
		return
	}
	f.closed = true
	if !f.started {
		// Run on an ended context releases each side's socket (and
		// what else it holds, a sender's eventfd) at once.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		f.ends.Sender.Run(done)
		f.ends.Receiver.Run(done)
		return
	}
	f.cancel()
	f.wg.Wait()
	sent, received := f.tr.Delivered()
	f.mu.Lock()
	f.rec.SentBytes, f.rec.ReceivedBytes = sent, received
	f.mu.Unlock()
}

// Result returns what the flow recorded, as its transport's result.
func (f *Flow[S]) Result() traffic.FlowResult {
	f.mu.Lock()
	r := f.rec
	r.Samples = append([]S(nil), f.rec.Samples...)
	f.mu.Unlock()
	return f.tr.Result(r)
}
