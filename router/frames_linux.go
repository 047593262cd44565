package router

import (
	"fmt"
	"syscall"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/packetsock"
	"wanlab/tun"
)

// frameDevice is a packet socket on an Ethernet interface, as
// packetsock.Device is: the frame ingress reads it and the egress writes
// it, both on the loop's thread.
type frameDevice interface {
	Name() string
	TryRead(bufs [][]byte, frames []packetsock.Frame, offset int) (int, error)
	Wait(wake int, timeout time.Duration) (readable, woken bool, err error)
	WriteOne(mac, b []byte, offset int) syscall.Errno
	Offloads() packetsock.Offload
}

var _ frameDevice = (*packetsock.Device)(nil)

// EtherTypes of the packets that cross the link.
const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
)

// attach picks the ingress and egress for the devices in and out: packet
// sockets and VNet TUNs are read and written on the loop's thread; other
// TUNs through a reader goroutine and in batches.
func (l *loop) attach(in, out Device) error {
	fin, inFrames := in.(frameDevice)
	fout, outFrames := out.(frameDevice)
	if inFrames || outFrames {
		if !inFrames || !outFrames {
			return fmt.Errorf("router: %s reads %s and writes %s: a packet socket works only with another", l.name, in.Name(), out.Name())
		}
		hdrs := newL2Headers()
		l.vnet, l.stamps = true, true
		const all = packetsock.TSO4 | packetsock.TSO6 | packetsock.USO
		l.outGSO = fout.Offloads()&all == all
		l.in = newFrameIngress(fin, fout, hdrs, l.large, l.clk)
		l.out = newFrameEgress(fout, hdrs)
		return nil
	}
	tin, inTUN := in.(tun.Device)
	tout, outTUN := out.(tun.Device)
	if !inTUN || !outTUN {
		return fmt.Errorf("router: %s: devices %s (%T) and %s (%T): give two TUN devices (tun.Device) or two packet sockets (packetsock.Device)", l.name, in.Name(), in, out.Name(), out)
	}
	vin, inVNet := in.(tun.VNetDevice)
	vout, outVNet := out.(tun.VNetDevice)
	l.vnet, l.outGSO = inVNet && outVNet, true
	if inVNet {
		l.in = newVNetIngress(vin, l.large, l.clk, readBatch)
	} else {
		l.in = newChanIngress(tin, l.large, l.wake, l.clk)
	}
	if outVNet {
		l.out = newVNetEgress(vout)
	} else {
		l.out = newBatchEgress(tout)
	}
	return nil
}

// frameIngress reads a packet socket on the loop's thread into a ring of
// large pool packets, as vnetIngress reads a TUN, and stamps each packet's
// arrival with the time the kernel took it in (mapped onto the router's
// clock by rt), not the time it was read: a packet that waited in the
// socket's ring while the loop was busy or asleep is due as early as its
// path says, and a release that then comes late is counted late. The
// packet is what follows the frame's Ethernet header; the header itself
// goes into hdrs, the packet carries its index. A frame that is not an IP
// packet (ARP, LLDP, ...) takes no part in the link: it is written to the
// other side at once.
type frameIngress struct {
	dev    frameDevice
	out    frameDevice // where frames that are not IP packets go
	hdrs   *l2Headers
	clk    *clock.Real
	rt     realtime
	last   clock.Time // the latest arrival handed over
	ring   readRing
	frames []packetsock.Frame
	// hold, set by tests only, is called by a read that found a frame,
	// before it looks at the clock: a loop held up that long.
	hold func()
}

func newFrameIngress(dev, out frameDevice, hdrs *l2Headers, pool *packet.Pool, clk *clock.Real) *frameIngress {
	return &frameIngress{
		dev:    dev,
		out:    out,
		hdrs:   hdrs,
		clk:    clk,
		rt:     realtime{clk: clk},
		ring:   newReadRing(pool, readBatch),
		frames: make([]packetsock.Frame, readBatch),
	}
}

// read reads and classifies one frame at a time, as vnetIngress does.
func (v *frameIngress) read(k int, to arriver) (int, bool, error) {
	k = min(k, len(v.frames))
	n := 0
	for n < k {
		got, err := v.dev.TryRead(v.ring.bufs[n:n+1], v.frames[n:n+1], headroom)
		if got == 0 || err != nil {
			return n, false, err
		}
		if v.hold != nil {
			v.hold()
		}
		now := v.clk.Now()
		f := &v.frames[n]
		switch f.EtherType() {
		case etherIPv4, etherIPv6:
			at := v.arrival(f.Time, now)
			to.waited(time.Duration(now - at))
			p := v.ring.pkts[n]
			p.SetData(headroom, f.Len)
			if l2 := v.hdrs.intern(f.Header()); l2 == 0 {
				// A table of 65535 headers is full: never met, but
				// counted should it be.
				to.malformedRead(1)
			} else if to.arrive(at, p, true, l2) {
				v.ring.renew(n)
			}
		default:
			to.crossed(f.MACLen+f.Len, v.out.WriteOne(f.Header(), v.ring.bufs[n][:headroom+f.Len], headroom))
		}
		n++
		if to.enough() {
			return n, true, nil
		}
	}
	return n, true, nil
}

// arrival returns the router's time of a frame the kernel stamped with
// kernel (CLOCK_REALTIME) and the loop read at now: never later than now,
// and never earlier than the arrival before it, so that a direction's
// arrivals keep their order (the kernel stamps frames taken in on two
// CPUs at once in either order, and a step of the real-time clock moves
// its stamps until the next refresh), nor than the router's start, time 0
// (a frame that waited in the ring from before then arrives at it).
func (v *frameIngress) arrival(kernel int64, now clock.Time) clock.Time {
	at := max(v.rt.toClock(kernel, now), v.last)
	v.last = at
	return at
}

func (v *frameIngress) wait(wake int, timeout time.Duration) (event, woken bool, err error) {
	readable, woken, err := v.dev.Wait(wake, timeout)
	return readable || woken, woken, err
}

func (v *frameIngress) close() {}

// frameSink writes to a packet socket, each packet with the link-layer
// header it came with.
type frameSink struct {
	dev  frameDevice
	hdrs *l2Headers
}

func (s frameSink) writeOne(b []byte, off int, p *packet.Packet) syscall.Errno {
	return s.dev.WriteOne(s.hdrs.get(tagL2(p)), b, off)
}

// newFrameEgress writes to a packet socket, coalescing what its interface
// segments itself (packetsock.Offload): the kernel drops a super-packet it
// would have to segment in software.
func newFrameEgress(dev frameDevice, hdrs *l2Headers) *vnetEgress {
	o := dev.Offloads()
	uso := o&packetsock.USO != 0
	return newEgress(frameSink{dev, hdrs}, o&(packetsock.TSO4|packetsock.TSO6) == packetsock.TSO4|packetsock.TSO6, uso, uso)
}
