package traffic

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/clock"
	"wanlab/packet"
)

// ICMPProbeConfig describes a stream of ICMP echo requests, like
// ping -i INTERVAL: the target's kernel answers them by itself.
type ICMPProbeConfig struct {
	// Label names the stream (for instance "Ping (ms) ICMP").
	Label string
	// Client sends the requests from a raw socket its Net makes (root, or
	// CAP_NET_RAW). A valid Client.Addr is the source address, and then
	// only replies to it are seen.
	Client Host
	// Target is the address pinged.
	Target netip.Addr
	// Interval is the time between requests; 0 means the plan's step.
	Interval time.Duration
	// Size is the echo data in bytes, as ping -s: at least 8 (the probe's
	// cookie and sequence number); 0 means ping's 56.
	Size int
	// TOS is the TOS byte of the requests (the kernel's replies copy it).
	TOS int
	// Start and Stop are offsets from T0: requests are sent at
	// Start + i·Interval while that is before Stop.
	Start, Stop time.Duration
}

// ICMPProbe is a stream of ICMP echo requests. Each has its RTT; a lost
// one is recorded with its time, its direction unknown. The echo
// identifier is chosen at random for the run; the data carries a cookie
// and the full sequence number, so that other pings in the same namespace
// and the 16-bit sequence's wrap do not confuse the stream.
type ICMPProbe struct {
	cfg    ICMPProbeConfig
	cookie uint32
	id     uint16
	probeStream

	conn   net.PacketConn
	dst    *net.IPAddr
	env    Env
	opened bool
}

// ipMsgConn is the part of *net.IPConn the ICMP probes read with: the
// datagram with its control messages (the IPv6 traffic class).
type ipMsgConn interface {
	ReadMsgIP(b, oob []byte) (n, oobn, flags int, addr *net.IPAddr, err error)
}

// The ICMP types of echo request and reply (RFC 792, RFC 4443).
const (
	icmpEchoRequest   = 8
	icmpEchoReply     = 0
	icmpv6EchoRequest = 128
	icmpv6EchoReply   = 129
	icmpHeaderLen     = 8
	icmpProbeData     = 8 // cookie and 32-bit sequence number
)

// NewICMPProbe checks cfg and returns the stream.
func NewICMPProbe(cfg ICMPProbeConfig) (*ICMPProbe, error) {
	if cfg.Client.Net == nil {
		return nil, fmt.Errorf("traffic: ICMP probes %q: the client needs a Net (traffic.Local{} for this process's namespace)", cfg.Label)
	}
	if !cfg.Target.IsValid() {
		return nil, fmt.Errorf("traffic: ICMP probes %q: no target: set Target to the address to ping", cfg.Label)
	}
	if cfg.Client.Addr.IsValid() && cfg.Client.Addr.Is4() != cfg.Target.Is4() {
		return nil, fmt.Errorf("traffic: ICMP probes %q: source %v and target %v are of different IP versions", cfg.Label, cfg.Client.Addr, cfg.Target)
	}
	if err := CheckTOS(cfg.Label, cfg.TOS); err != nil {
		return nil, err
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("traffic: ICMP probes %q: negative interval: use 0 for the plan's step", cfg.Label)
	}
	if cfg.Size == 0 {
		cfg.Size = 56
	}
	if cfg.Size < icmpProbeData || cfg.Size > maxUDPPayload {
		return nil, fmt.Errorf("traffic: ICMP probes %q: size %d: give from %d to %d bytes of echo data", cfg.Label, cfg.Size, icmpProbeData, maxUDPPayload)
	}
	return &ICMPProbe{cfg: cfg, cookie: rand.Uint32(), id: uint16(rand.Uint32())}, nil
}

// Label returns the stream's label.
func (p *ICMPProbe) Label() string { return p.cfg.Label }

// Window returns the stream's start and stop offsets.
func (p *ICMPProbe) Window() (start, stop time.Duration) { return p.cfg.Start, p.cfg.Stop }

// ID returns the echo identifier of the stream's requests (and so of the
// replies), which the router uses as both ports of the stream's 5-tuple.
func (p *ICMPProbe) ID() uint16 { return p.id }

// Open makes the raw socket.
func (p *ICMPProbe) Open(ctx context.Context) error {
	if p.opened {
		return errors.New("traffic: an ICMP probe stream runs once: make a new one for each run")
	}
	p.opened = true
	network, laddr := "ip4:icmp", "0.0.0.0"
	if p.cfg.Target.Is6() {
		network, laddr = "ip6:ipv6-icmp", "::"
	}
	if p.cfg.Client.Addr.IsValid() {
		laddr = p.cfg.Client.Addr.String()
	}
	opts := sockOpts{tos: p.cfg.TOS, recvTOS: true, rxTime: true}
	c, err := p.cfg.Client.Net.ListenPacket(ctx, network, laddr, opts.control())
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("traffic: ICMP probes need a raw socket: run as root or grant CAP_NET_RAW (%w)", err)
	}
	if err != nil {
		return err
	}
	if _, ok := c.(ipMsgConn); !ok {
		c.Close()
		return fmt.Errorf("traffic: the client's Net made a %T for %s: want a *net.IPConn", c, network)
	}
	p.conn = c
	p.dst = &net.IPAddr{IP: p.cfg.Target.AsSlice(), Zone: p.cfg.Target.Zone()}
	return nil
}

// Start launches the receiver and the sender.
func (p *ICMPProbe) Start(ctx context.Context, env Env) {
	p.env = env
	if p.cfg.Interval == 0 {
		p.cfg.Interval = env.Step
	}
	p.wg.Add(2)
	go p.receive()
	go func() {
		defer p.wg.Done()
		buf := make([]byte, icmpHeaderLen+p.cfg.Size)
		sendProbes(ctx, env, p.cfg.Start, p.cfg.Stop, p.cfg.Interval, func() bool { return p.send(buf) })
	}()
}

// send sends the next echo request; it returns false when the socket is
// closed.
func (p *ICMPProbe) send(buf []byte) bool {
	// Record the request before it leaves: on loopback the reply can come
	// back before WriteTo returns.
	seq := p.book.sent(p.env.Clock.Now())
	buf[0] = icmpEchoRequest
	if p.cfg.Target.Is6() {
		buf[0] = icmpv6EchoRequest
	}
	buf[1] = 0
	binary.BigEndian.PutUint16(buf[2:], 0)
	binary.BigEndian.PutUint16(buf[4:], p.id)
	binary.BigEndian.PutUint16(buf[6:], uint16(seq))
	binary.BigEndian.PutUint32(buf[8:], p.cookie)
	binary.BigEndian.PutUint32(buf[12:], seq)
	if p.cfg.Target.Is4() {
		// The kernel fills in ICMPv6's checksum (RFC 3542 section 3.1),
		// not ICMPv4's.
		binary.BigEndian.PutUint16(buf[2:], packet.Checksum(buf))
	}
	_, err := p.conn.WriteTo(buf, p.dst)
	return p.settleSend(seq, "echo request", err)
}

// receive takes the echo replies.
func (p *ICMPProbe) receive() {
	defer p.wg.Done()
	c := p.conn.(ipMsgConn)
	buf := make([]byte, 65536)
	oob := make([]byte, 128)
	v4 := p.cfg.Target.Is4()
	for {
		n, oobn, _, _, err := c.ReadMsgIP(buf, oob)
		if err != nil {
			if errClosed(err) {
				return
			}
			p.fail(fmt.Errorf("receive: %w", err))
			return
		}
		msg, tos := buf[:n], -1
		if v4 {
			// An IPv4 raw socket reads the IP header too (raw(7)).
			if n < 20 || buf[0]>>4 != 4 || int(buf[0]&0x0f)*4 > n {
				continue
			}
			msg, tos = buf[int(buf[0]&0x0f)*4:n], int(buf[1])
		} else {
			tos = ReceivedTOS(oob[:oobn])
		}
		seq, ok := p.parseReply(msg)
		if !ok {
			continue
		}
		p.book.reply(seq, receivedAt(oob[:oobn], p.env.Clock), 0, 0, tos)
	}
}

// parseReply returns the full sequence number of an echo reply to this
// stream.
func (p *ICMPProbe) parseReply(m []byte) (uint32, bool) {
	want := byte(icmpEchoReply)
	if p.cfg.Target.Is6() {
		want = icmpv6EchoReply
	}
	if len(m) < icmpHeaderLen+icmpProbeData || m[0] != want || m[1] != 0 ||
		binary.BigEndian.Uint16(m[4:]) != p.id || binary.BigEndian.Uint32(m[8:]) != p.cookie {
		return 0, false
	}
	seq := binary.BigEndian.Uint32(m[12:])
	if uint16(seq) != binary.BigEndian.Uint16(m[6:]) {
		return 0, false
	}
	return seq, true
}

// Sample declares lost the requests whose time is up.
func (p *ICMPProbe) Sample(k int, t clock.Time) { p.book.expire(t) }

// Close stops the stream, closes its socket and declares lost every
// request still unanswered.
func (p *ICMPProbe) Close() {
	p.close(func() {
		if p.conn != nil {
			p.conn.Close()
		}
	})
}

// Result returns the probes.
func (p *ICMPProbe) Result() FlowResult {
	r := &ProbeResult{
		FlowInfo: FlowInfo{Label: p.cfg.Label, Kind: "icmp_probe", Start: p.cfg.Start, Stop: p.cfg.Stop},
		Interval: p.cfg.Interval, Size: p.cfg.Size, TOS: p.cfg.TOS,
	}
	return p.result(r)
}
