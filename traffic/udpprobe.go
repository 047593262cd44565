package traffic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/clock"
)

// UDPProbeConfig describes a stream of UDP latency probes, like irtt's:
// the client sends a probe per interval, the server echoes it with its
// own receive and send times.
type UDPProbeConfig struct {
	// Label names the stream (for instance "Ping (ms) UDP EF").
	Label string
	// Client sends the probes to the server, which listens on
	// Server.Addr. A valid Client.Addr is bound as the source address.
	Client, Server Host
	// Interval is the time between probes; 0 means the plan's step.
	Interval time.Duration
	// Size is the UDP payload of each probe in bytes, at least 40 (the
	// probe's header); 0 means 40.
	Size int
	// TOS is the TOS byte of the probes and of the replies (rrul marks
	// its probes EF 0xb8, BK 0x20 and BE 0).
	TOS int
	// Start and Stop are offsets from T0: probes are sent at
	// Start + i·Interval while that is before Stop.
	Start, Stop time.Duration
}

// UDPProbe is a stream of UDP latency probes. Its result has every
// probe's RTT and true one-way delays, and every lost probe with its
// direction: the server side is in this process too, and records which
// probes it received.
type UDPProbe struct {
	cfg    UDPProbeConfig
	cookie uint32
	probeStream

	// Set by Open and Start, read only afterwards.
	client net.Conn
	server net.PacketConn
	env    Env
	opened bool
}

// udpMsgConn is the part of *net.UDPConn the probes use: reading a
// datagram with its control messages (the received TOS) and its sender.
type udpMsgConn interface {
	ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// NewUDPProbe checks cfg and returns the stream.
func NewUDPProbe(cfg UDPProbeConfig) (*UDPProbe, error) {
	if err := CheckHosts(cfg.Label, cfg.Client, cfg.Server); err != nil {
		return nil, err
	}
	if err := CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("traffic: UDP probes %q: negative interval: use 0 for the plan's step", cfg.Label)
	}
	if cfg.Size == 0 {
		cfg.Size = probeHeaderLen
	}
	if cfg.Size < probeHeaderLen || cfg.Size > maxUDPPayload {
		return nil, fmt.Errorf("traffic: UDP probes %q: size %d: give a UDP payload from %d to %d bytes", cfg.Label, cfg.Size, probeHeaderLen, maxUDPPayload)
	}
	p := &UDPProbe{cfg: cfg, cookie: rand.Uint32()}
	p.book.oneWay = true
	return p, nil
}

// maxUDPPayload is the largest UDP payload over IPv4 (65535 less the IP
// and UDP headers).
const maxUDPPayload = 65507

// Label returns the stream's label.
func (p *UDPProbe) Label() string { return p.cfg.Label }

// Window returns the stream's start and stop offsets.
func (p *UDPProbe) Window() (start, stop time.Duration) { return p.cfg.Start, p.cfg.Stop }

func udpNetwork(a netip.Addr) string {
	if a.Is4() {
		return "udp4"
	}
	return "udp6"
}

// Open makes the server's socket and the client's, connected to it.
func (p *UDPProbe) Open(ctx context.Context) error {
	if p.opened {
		return errors.New("traffic: a UDP probe stream runs once: make a new one for each run")
	}
	p.opened = true
	opts := sockOpts{tos: p.cfg.TOS, recvTOS: true, rxTime: true}
	network := udpNetwork(p.cfg.Server.Addr)
	srv, err := p.cfg.Server.Net.ListenPacket(ctx, network, p.cfg.Server.listenAddr(), opts.control())
	if err != nil {
		return err
	}
	if _, ok := srv.(udpMsgConn); !ok {
		srv.Close()
		return fmt.Errorf("traffic: the server's Net made a %T for %s: want a *net.UDPConn", srv, network)
	}
	cl, err := p.cfg.Client.Net.Dial(ctx, network, p.cfg.Client.bindAddr(), srv.LocalAddr().String(), opts.control())
	if err != nil {
		srv.Close()
		return err
	}
	if _, ok := cl.(udpMsgConn); !ok {
		srv.Close()
		cl.Close()
		return fmt.Errorf("traffic: the client's Net made a %T for %s: want a *net.UDPConn", cl, network)
	}
	p.client, p.server = cl, srv
	return nil
}

// Start launches the server, the client's receiver and its sender.
func (p *UDPProbe) Start(ctx context.Context, env Env) {
	p.env = env
	interval := p.cfg.Interval
	if interval == 0 {
		interval = env.Step
	}
	p.cfg.Interval = interval
	p.wg.Add(3)
	go p.serve()
	go p.receive()
	go func() {
		defer p.wg.Done()
		buf := make([]byte, p.cfg.Size)
		sendProbes(ctx, env, p.cfg.Start, p.cfg.Stop, interval, func() bool { return p.send(buf) })
	}()
}

// sendProbes calls send at T0 + start + i·interval for i = 0, 1, …
// while that is before T0 + stop, until ctx ends or send returns false.
// The schedule is absolute: a late send does not delay the next one.
func sendProbes(ctx context.Context, env Env, start, stop, interval time.Duration, send func() bool) {
	w := NewWaiter(env.Clock)
	for i := 0; ; i++ {
		due := env.At(start + time.Duration(i)*interval)
		if due >= env.At(stop) || !w.Until(ctx, due) || !send() {
			return
		}
	}
}

// send sends the next probe; it returns false when the socket is closed.
func (p *UDPProbe) send(buf []byte) bool {
	// Record the probe before it leaves: on loopback the reply can come
	// back before Write returns.
	now := p.env.Clock.Now()
	seq := p.book.sent(now)
	h := probeHeader{cookie: p.cookie, seq: seq, kind: probeRequest, tos: -1, clientSend: now}
	h.encode(buf)
	_, err := p.client.Write(buf)
	return p.settleSend(seq, "probe", err)
}

// serve echoes probes: it is the server.
func (p *UDPProbe) serve() {
	c := p.server.(udpMsgConn)
	p.readEach(c, "server", nil, func(buf []byte, n int, oob []byte, from netip.AddrPort) {
		now := receivedAt(oob, p.env.Clock)
		h, ok := decodeProbe(buf[:n])
		if !ok || h.cookie != p.cookie || h.kind != probeRequest {
			return
		}
		tos := ReceivedTOS(oob)
		if !p.book.serverGot(h.seq, tos) {
			return
		}
		h.kind, h.tos, h.serverRecv = probeReply, tos, now
		h.serverSend = p.env.Clock.Now()
		h.encode(buf)
		if _, err := c.WriteToUDPAddrPort(buf[:n], from); err != nil && !errClosed(err) {
			p.fail(fmt.Errorf("server: reply to probe %d: %w", h.seq, err))
		}
	})
}

// receive takes the replies: it is the client's receiver.
func (p *UDPProbe) receive() {
	// A connected UDP socket reports an ICMP error of an earlier probe
	// (port unreachable) on a later read: that probe is lost, the stream
	// goes on.
	refused := func(err error) bool { return errors.Is(err, unix.ECONNREFUSED) }
	p.readEach(p.client.(udpMsgConn), "client", refused, func(buf []byte, n int, oob []byte, _ netip.AddrPort) {
		h, ok := decodeProbe(buf[:n])
		if !ok || h.cookie != p.cookie || h.kind != probeReply {
			return
		}
		p.book.reply(h.seq, receivedAt(oob, p.env.Clock), h.serverRecv, h.serverSend, ReceivedTOS(oob))
	})
}

// readEach hands got each datagram c, the socket of the stream's side
// (named in errors), reads into buf, with its control messages, until c is
// closed. A read error ends it and fails the stream, unless goOn says that
// the reads may go on.
func (p *UDPProbe) readEach(c udpMsgConn, side string, goOn func(error) bool, got func(buf []byte, n int, oob []byte, from netip.AddrPort)) {
	defer p.wg.Done()
	buf := make([]byte, maxUDPPayload)
	oob := make([]byte, 128)
	for {
		n, oobn, _, from, err := c.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errClosed(err) {
				return
			}
			if goOn != nil && goOn(err) {
				continue
			}
			p.fail(fmt.Errorf("%s: %w", side, err))
			return
		}
		got(buf, n, oob[:oobn], from)
	}
}

// Sample declares lost the probes whose time is up.
func (p *UDPProbe) Sample(k int, t clock.Time) { p.book.expire(t) }

// Close stops the stream, closes its sockets and declares lost every probe
// still unanswered.
func (p *UDPProbe) Close() {
	p.close(func() {
		if p.client != nil {
			p.client.Close()
			p.server.Close()
		}
	})
}

// Result returns the probes.
func (p *UDPProbe) Result() FlowResult {
	r := &ProbeResult{
		FlowInfo: FlowInfo{Label: p.cfg.Label, Kind: "udp_probe", Start: p.cfg.Start, Stop: p.cfg.Stop},
		Interval: p.cfg.Interval, Size: p.cfg.Size, TOS: p.cfg.TOS, OneWay: true,
	}
	return p.result(r)
}
