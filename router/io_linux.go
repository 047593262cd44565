package router

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/tun"
)

// readRing is what an ingress on the loop's thread reads into: a batch of
// large pool packets and their buffers. A packet the link keeps is
// replaced in the ring by a fresh one (renew).
type readRing struct {
	pool *packet.Pool
	pkts []*packet.Packet
	bufs [][]byte
}

// newReadRing returns a ring of n packets.
func newReadRing(pool *packet.Pool, n int) readRing {
	r := readRing{pool: pool, pkts: make([]*packet.Packet, n), bufs: make([][]byte, n)}
	for i := range r.pkts {
		r.renew(i)
	}
	return r
}

// renew puts a fresh packet at i.
func (r *readRing) renew(i int) {
	r.pkts[i] = r.pool.Get()
	r.bufs[i], _ = r.pkts[i].Buffer()
}

// vnetIngress reads a VNet device directly on the loop's thread.
type vnetIngress struct {
	dev   tun.VNetDevice
	clk   *clock.Real
	ring  readRing
	sizes []int
}

// newVNetIngress reads dev into a ring of n packets: up to n per read.
func newVNetIngress(dev tun.VNetDevice, pool *packet.Pool, clk *clock.Real, n int) *vnetIngress {
	return &vnetIngress{dev: dev, clk: clk, ring: newReadRing(pool, n), sizes: make([]int, n)}
}

// read reads and classifies one packet at a time, so that each packet's
// arrival is when it was read: a burst the kernel queued at once becomes
// due again spread as the router took it in, not all at the time its last
// packet was read.
func (v *vnetIngress) read(k int, to arriver) (int, bool, error) {
	k = min(k, len(v.sizes))
	n := 0
	for n < k {
		got, err := v.dev.TryRead(v.ring.bufs[n:n+1], v.sizes[n:n+1], headroom)
		if got == 0 {
			return n, false, err
		}
		p := v.ring.pkts[n]
		p.SetData(headroom, v.sizes[n])
		if to.arrive(v.clk.Now(), p, true, 0) {
			v.ring.renew(n)
		}
		n++
		if err != nil {
			return n, false, err
		}
		if to.enough() {
			return n, true, nil
		}
	}
	return n, true, nil
}

func (v *vnetIngress) wait(wake int, timeout time.Duration) (event, woken bool, err error) {
	readable, woken, err := v.dev.Wait(wake, timeout)
	return readable || woken, woken, err
}

func (v *vnetIngress) close() {}

// vnetEgress writes packets with the virtio-net header that describes
// each (the kernel's, or the one Cut gave a part of a super-packet), or
// zeros for a packet the router split or completed, to a VNet TUN or a
// packet socket (see sink). Packets of one TCP flow that leave in the
// same release pass and continue each other go in one GSO super-packet
// (see groTable) where the device takes TCP super-packets; where it takes
// USO, so do consecutive UDP datagrams of one flow (see usoBatch); every
// other packet gets a system call of its own.
type vnetEgress struct {
	dev        sink
	uso4, uso6 bool
	batch      *usoBatch
	gro        *groTable
	groOff     bool // the device takes no TCP super-packets, or refused one
}

// sink is the device a vnetEgress writes to.
type sink interface {
	// writeOne writes b[off:], its virtio-net header at
	// b[off-tun.VNetHdrLen:off], in one system call, as the packet p (a
	// super-packet coalesced from several, as the first: its link-layer
	// header, on a packet socket, is p's), and returns the errno of a
	// refused write.
	writeOne(b []byte, off int, p *packet.Packet) syscall.Errno
}

// tunSink writes to a VNet TUN.
type tunSink struct{ dev tun.VNetDevice }

func (s tunSink) writeOne(b []byte, off int, _ *packet.Packet) syscall.Errno {
	return s.dev.WriteOne(b, off)
}

// TUNSETOFFLOAD flags for USO (TUN_F_USO4, TUN_F_USO6 in
// include/uapi/linux/if_tun.h), as tun.VNetDevice.Offloads reports them.
const (
	tunUSO4 = 0x20
	tunUSO6 = 0x40
)

// newVNetEgress writes to a VNet TUN, which takes TCP super-packets and,
// with the offloads it reports, UDP ones.
func newVNetEgress(dev tun.VNetDevice) *vnetEgress {
	off := dev.Offloads()
	return newEgress(tunSink{dev}, true, off&tunUSO4 != 0, off&tunUSO6 != 0)
}

// newEgress writes to dev, coalescing TCP segments if tso and UDP
// datagrams of each IP version if uso4 or uso6.
func newEgress(dev sink, tso, uso4, uso6 bool) *vnetEgress {
	return &vnetEgress{dev: dev, uso4: uso4, uso6: uso6, groOff: !tso, batch: newUSOBatch(), gro: newGROTable()}
}

func (e *vnetEgress) write(p *packet.Packet, deadline clock.Time, to departures) {
	if !e.groOff {
		if s, ok := tcpCandidate(p); ok {
			e.coalesce(p, s, deadline, to)
			return
		}
	}
	if e.uso4 || e.uso6 {
		if d, ok := usoCandidate(p); ok && (d.v6 && e.uso6 || !d.v6 && e.uso4) {
			if !e.batch.add(p, d, deadline) {
				e.flushUSO(to)
				e.batch.add(p, d, deadline)
			}
			return
		}
	}
	e.flush(to)
	e.writeOne(p, deadline, to)
}

// coalesce adds p, a TCP packet described by s, to its flow's batch, or
// writes that batch and starts another with p.
func (e *vnetEgress) coalesce(p *packet.Packet, s tcpSeg, deadline clock.Time, to departures) {
	flow := tagFlow(p)
	if b := e.gro.batch(flow); b != nil {
		if b.add(p, s, deadline) {
			return
		}
		e.writeBatch(b, to)
	}
	if len(e.gro.open) == groFlows {
		e.writeBatch(e.gro.open[0], to)
	}
	e.gro.start(flow, p, s, deadline)
}

// writeBatch writes b's packets, as one super-packet if there are several.
func (e *vnetEgress) writeBatch(b *groBatch, to departures) {
	if len(b.pkts) == 1 {
		e.writeOne(b.pkts[0], b.dls[0], to)
		e.gro.close(b)
		return
	}
	if e.writeSuper(e.gro.build(b), b.pkts, b.dls, to) {
		to.merged(len(b.pkts))
	} else {
		// A kernel that refuses the super-packet gets no more of them.
		e.groOff = true
	}
	e.gro.close(b)
}

// writeSuper writes buf, the super-packet made of pkts (due at dls), and
// reports whether the device took it; when the kernel refuses it (EINVAL)
// it writes pkts one by one instead.
func (e *vnetEgress) writeSuper(buf []byte, pkts []*packet.Packet, dls []clock.Time, to departures) bool {
	t := to.now()
	errno := e.dev.writeOne(buf, headroom, pkts[0])
	if errno == syscall.EINVAL {
		for i, p := range pkts {
			e.writeOne(p, dls[i], to)
		}
		return false
	}
	for i, p := range pkts {
		written(p, dls[i], t, errno, to)
	}
	return true
}

// writeOne writes p with a system call of its own.
func (e *vnetEgress) writeOne(p *packet.Packet, deadline clock.Time, to departures) {
	buf, off := p.Buffer()
	if !p.VNet {
		clear(buf[off-tun.VNetHdrLen : off])
	}
	t := to.now()
	written(p, deadline, t, e.dev.writeOne(buf[:off+p.Len()], off, p), to)
}

// written records that p, due at deadline, was written at t with errno
// (0 if the device took it, and then p is captured) and frees it.
func written(p *packet.Packet, deadline, t clock.Time, errno syscall.Errno, to departures) {
	if errno == 0 {
		to.capture(p, t)
	}
	to.departed(p, deadline, t, errno)
	p.Free()
}

// flush writes every batch gathered so far.
func (e *vnetEgress) flush(to departures) {
	for len(e.gro.open) > 0 {
		e.writeBatch(e.gro.open[0], to)
	}
	e.flushUSO(to)
}

// flushUSO writes the USO batch gathered so far.
func (e *vnetEgress) flushUSO(to departures) {
	u := e.batch
	switch len(u.pkts) {
	case 0:
		return
	case 1:
		e.writeOne(u.pkts[0], u.dls[0], to)
		u.reset()
		return
	}
	if e.writeSuper(u.build(), u.pkts, u.dls, to) {
		to.coalesced(len(u.pkts))
	} else {
		// A kernel that refuses the super-packet gets no more of them.
		e.uso4, e.uso6 = false, false
	}
	u.reset()
}

// chanIngress reads any Device on a goroutine of its own (the Device
// interface blocks) and hands batches to the loop, signalling its wake
// eventfd for each.
type chanIngress struct {
	dev   tun.Device
	pool  *packet.Pool
	clk   *clock.Real
	full  chan *rbatch
	free  chan *rbatch
	errc  chan error
	done  chan struct{}
	stage *packet.Packet // large packet the loop copies each one into
	// malformed counts reads that failed with tun.ErrMalformed, for the
	// loop to take over.
	malformed atomic.Uint64

	mu     sync.Mutex // guards wake against close
	wake   int
	closed bool
}

type rbatch struct {
	bufs  [][]byte
	sizes []int
	n     int
	at    clock.Time
}

const (
	chanBatches = 4
	chanOffset  = 16 // room for the offload device's virtio-net header
)

func newChanIngress(dev tun.Device, pool *packet.Pool, wake int, clk *clock.Real) *chanIngress {
	c := &chanIngress{
		dev:  dev,
		pool: pool,
		clk:  clk,
		full: make(chan *rbatch, chanBatches),
		free: make(chan *rbatch, chanBatches),
		errc: make(chan error, 1),
		done: make(chan struct{}),
		wake: wake,
	}
	n := dev.BatchSize()
	for range chanBatches {
		b := &rbatch{bufs: make([][]byte, n), sizes: make([]int, n)}
		for i := range b.bufs {
			b.bufs[i] = make([]byte, chanOffset+tun.MaxCoalesced)
		}
		c.free <- b
	}
	go c.reader()
	return c
}

func (c *chanIngress) reader() {
	for {
		var b *rbatch
		select {
		case b = <-c.free:
		case <-c.done:
			return
		}
		n, err := c.dev.Read(b.bufs, b.sizes, chanOffset)
		if errors.Is(err, tun.ErrMalformed) {
			// One packet the device could not take apart: counted,
			// and the reader goes on.
			c.malformed.Add(1)
			c.free <- b
			c.signal() // so that the loop takes the count over now
			continue
		}
		if errors.Is(err, tun.ErrTooManySegments) {
			// A super-packet whose segments beyond the batch were
			// lost: the ones read go on, the packet counts as
			// malformed.
			c.malformed.Add(1)
			err = nil
		}
		if err != nil {
			select {
			case c.errc <- err:
			default:
			}
			c.signal()
			return
		}
		b.n, b.at = n, c.clk.Now()
		select {
		case c.full <- b:
		case <-c.done:
			return
		}
		c.signal()
	}
}

func (c *chanIngress) signal() {
	c.mu.Lock()
	if !c.closed {
		signalWake(c.wake)
	}
	c.mu.Unlock()
}

// read takes up to chanBatches of the reader's batches, whole: k, which
// bounds the packets of a vnetIngress read, does not apply to batches
// the reader has already taken from the device. more reports that it took
// that many.
func (c *chanIngress) read(k int, to arriver) (int, bool, error) {
	if m := c.malformed.Swap(0); m > 0 {
		to.malformedRead(m)
	}
	total := 0
	for range chanBatches {
		select {
		case b := <-c.full:
			for i := range b.n {
				if c.stage == nil {
					c.stage = c.pool.Get()
				}
				sz := b.sizes[i]
				buf, off := c.stage.Buffer()
				copy(buf[off:], b.bufs[i][chanOffset:chanOffset+sz])
				c.stage.SetLen(sz)
				if to.arrive(b.at, c.stage, false, 0) {
					c.stage = nil
				}
			}
			total += b.n
			c.free <- b
		default:
			select {
			case err := <-c.errc:
				return total, false, err
			default:
			}
			return total, false, nil
		}
	}
	return total, true, nil
}

func (c *chanIngress) wait(wake int, timeout time.Duration) (event, woken bool, err error) {
	woken, err = pollWake(wake, timeout)
	return woken, woken, err
}

func (c *chanIngress) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	close(c.done)
}

// batchEgress writes to any Device in batches of its BatchSize.
type batchEgress struct {
	dev  tun.Device
	pend []*packet.Packet
	at   []clock.Time // each packet's deadline
	bufs [][]byte
}

func newBatchEgress(dev tun.Device) *batchEgress {
	n := max(dev.BatchSize(), 1)
	return &batchEgress{
		dev:  dev,
		pend: make([]*packet.Packet, 0, n),
		at:   make([]clock.Time, 0, n),
		bufs: make([][]byte, n),
	}
}

func (e *batchEgress) write(p *packet.Packet, deadline clock.Time, to departures) {
	e.pend = append(e.pend, p)
	e.at = append(e.at, deadline)
	if len(e.pend) == cap(e.pend) {
		e.flush(to)
	}
}

func (e *batchEgress) flush(to departures) {
	k := len(e.pend)
	if k == 0 {
		return
	}
	t := to.now()
	for i, p := range e.pend {
		// Captured before Write, which may coalesce packets in place.
		to.capture(p, t)
		buf, off := p.Buffer()
		e.bufs[i] = buf[off-chanOffset : off+p.Len()]
	}
	n, err := e.dev.Write(e.bufs[:k], chanOffset)
	var errno syscall.Errno
	if err != nil {
		errno = errnoOf(err)
	}
	for i, p := range e.pend {
		if err == nil || i < n {
			to.departed(p, e.at[i], t, 0)
		} else {
			to.departed(p, e.at[i], t, errno)
		}
		p.Free()
		e.pend[i] = nil
	}
	e.pend, e.at = e.pend[:0], e.at[:0]
}

// errnoOf returns the errno inside err, EBADF for a closed device and EIO
// for anything else.
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, os.ErrClosed):
		return syscall.EBADF
	}
	return syscall.EIO
}
