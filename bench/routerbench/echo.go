package main

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"wanlab/netns"
	"wanlab/traffic"
)

// The dumbbell mode's RTT probes: each client sends a small UDP datagram
// every echoInterval to an echo socket in the server, and times the reply
// with Go's monotonic clock. ping's output has a resolution of 0.1 ms
// above 10 ms, which is 1 % of the smallest RTT the mode checks; this has
// the clock's.

// echoPort is the server's echo socket's port.
const echoPort = 7007

// echoInterval is the time between one client's probes: low enough a
// rate (10 kbit/s of 40-byte datagrams) not to count beside the uploads.
const echoInterval = 10 * time.Millisecond

// echoServer answers every datagram on conn with itself, until conn
// closes.
func echoServer(conn net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := conn.ReadFrom(buf)
		if err != nil {
			return
		}
		conn.WriteTo(buf[:n], addr)
	}
}

// startEcho opens the echo socket in host h, at addr, and answers on it
// until the returned function closes it.
func startEcho(h *netns.Handle, addr netip.Addr) (stop func(), err error) {
	conn, err := traffic.InNamespace(h).ListenPacket(context.Background(), "udp", netip.AddrPortFrom(addr, echoPort).String(), nil)
	if err != nil {
		return nil, err
	}
	go echoServer(conn)
	return func() { conn.Close() }, nil
}

// rttProbe is one client's stream of probes. Each RTT is recorded in the
// phase current when its reply came: idle (before the uploads start) or
// loaded.
type rttProbe struct {
	conn   net.Conn
	base   time.Time
	loaded atomic.Bool

	mu         sync.Mutex
	idle, load []time.Duration
	sent       int
	done       chan struct{}
}

// startProbe sends probes from host h to the echo socket at server until
// stop.
func startProbe(h *netns.Handle, server netip.Addr) (*rttProbe, error) {
	conn, err := traffic.InNamespace(h).Dial(context.Background(), "udp", "", netip.AddrPortFrom(server, echoPort).String(), nil)
	if err != nil {
		return nil, err
	}
	p := &rttProbe{conn: conn, base: time.Now(), done: make(chan struct{})}
	go p.receive()
	go p.send()
	return p, nil
}

// send writes a probe carrying its send time every echoInterval.
func (p *rttProbe) send() {
	tick := time.NewTicker(echoInterval)
	defer tick.Stop()
	var b [40]byte
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		binary.BigEndian.PutUint64(b[:], uint64(time.Since(p.base)))
		if _, err := p.conn.Write(b[:]); err == nil {
			p.mu.Lock()
			p.sent++
			p.mu.Unlock()
		}
	}
}

// receive times each reply.
func (p *rttProbe) receive() {
	var b [64]byte
	for {
		n, err := p.conn.Read(b[:])
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil || n < 8 {
			continue // an ICMP error before the echo socket opened
		}
		rtt := time.Since(p.base) - time.Duration(binary.BigEndian.Uint64(b[:8]))
		p.mu.Lock()
		if p.loaded.Load() {
			p.load = append(p.load, rtt)
		} else {
			p.idle = append(p.idle, rtt)
		}
		p.mu.Unlock()
	}
}

// stop ends the probe; its samples stay.
func (p *rttProbe) stop() {
	close(p.done)
	p.conn.Close()
}

// rttStats are the minimum and median of samples, 0 without any.
func rttStats(samples []time.Duration) (minimum, median time.Duration) {
	if len(samples) == 0 {
		return 0, 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[0], s[len(s)/2]
}
