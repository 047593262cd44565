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
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/netns"
	"wanlab/packet"
	"wanlab/traffic"
)

// The dumbbell mode's RTT probes: each client sends an ICMP echo request
// every echoInterval to the server, whose kernel answers it, and the
// client's kernel stamps the reply as it takes it in (SO_TIMESTAMPNS). No
// program wakes up between the request's send and the reply's arrival, so
// what the probe adds to the path's RTT is the two hosts' stacks alone.
// ping does the same, but prints 0.1 ms steps above 10 ms: 1 % of the
// smallest RTT the mode checks.

// echoInterval is the time between one client's probes: low enough a
// rate (40-byte requests, 32 kbit/s) not to count beside the uploads.
const echoInterval = 10 * time.Millisecond

// echoID is the echo identifier of every probe; each client is in a
// namespace of its own, whose raw socket sees its own replies alone.
const echoID = 0x7762

// The phases of a probe's run: idle before the uploads, their ramp, and
// under load.
const (
	phaseIdle int32 = iota
	phaseRamp
	phaseLoaded
)

// rttProbe is one client's stream of probes. Each RTT is recorded in the
// phase current when its reply came: idle (before the uploads start) or
// loaded; a reply in the ramp between is counted alone.
type rttProbe struct {
	conn  *net.IPConn
	phase atomic.Int32

	mu         sync.Mutex
	idle, load []time.Duration
	replies    int
	done       chan struct{}
}

// startProbe sends probes from host h to server until stop.
func startProbe(h *netns.Handle, server netip.Addr) (*rttProbe, error) {
	stamp := func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
		return errors.Join(err, serr)
	}
	c, err := traffic.InNamespace(h).ListenPacket(context.Background(), "ip4:icmp", "0.0.0.0", stamp)
	if err != nil {
		return nil, err
	}
	p := &rttProbe{conn: c.(*net.IPConn), done: make(chan struct{})}
	go p.receive()
	go p.send(&net.IPAddr{IP: server.AsSlice()})
	return p, nil
}

// send writes an echo request carrying its send time (wall clock, as the
// kernel's receive stamps are) every echoInterval.
func (p *rttProbe) send(dst *net.IPAddr) {
	tick := time.NewTicker(echoInterval)
	defer tick.Stop()
	var b [40]byte
	b[0] = 8 // echo request
	binary.BigEndian.PutUint16(b[4:], echoID)
	for seq := uint16(0); ; seq++ {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		binary.BigEndian.PutUint16(b[6:], seq)
		binary.BigEndian.PutUint64(b[8:], uint64(time.Now().UnixNano()))
		binary.BigEndian.PutUint16(b[2:], 0)
		binary.BigEndian.PutUint16(b[2:], packet.Checksum(b[:]))
		p.conn.WriteTo(b[:], dst)
	}
}

// receive times each reply by its kernel receive stamp.
func (p *rttProbe) receive() {
	var b [1500]byte
	oob := make([]byte, unix.CmsgSpace(16))
	for {
		n, oobn, _, _, err := p.conn.ReadMsgIP(b[:], oob)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		m := b[:n]
		if err != nil || n < 1 {
			continue
		}
		if m[0]>>4 == 4 { // the IPv4 header, which a raw socket keeps
			m = m[int(m[0]&0xf)*4:]
		}
		if len(m) < 16 || m[0] != 0 || binary.BigEndian.Uint16(m[4:]) != echoID {
			continue // not one of our echo replies
		}
		at, ok := rxStamp(oob[:oobn])
		if !ok {
			continue
		}
		rtt := time.Duration(at - int64(binary.BigEndian.Uint64(m[8:])))
		p.mu.Lock()
		p.replies++
		switch p.phase.Load() {
		case phaseIdle:
			p.idle = append(p.idle, rtt)
		case phaseLoaded:
			p.load = append(p.load, rtt)
		}
		p.mu.Unlock()
	}
}

// rxStamp returns the SO_TIMESTAMPNS stamp (ns of wall time) among a
// datagram's control messages.
func rxStamp(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return sec*1e9 + nsec, true
		}
	}
	return 0, false
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
