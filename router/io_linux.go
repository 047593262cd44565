package router

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/tun"
)

// vnetIngress reads a VNet device directly on the loop's thread, into a
// ring of large pool packets; a packet the link keeps is replaced in the
// ring by a fresh one.
type vnetIngress struct {
	dev   tun.VNetDevice
	ring  []*packet.Packet
	bufs  [][]byte
	sizes []int
}

func newVNetIngress(dev tun.VNetDevice, pool *packet.Pool) *vnetIngress {
	v := &vnetIngress{
		dev:   dev,
		ring:  make([]*packet.Packet, readBatch),
		bufs:  make([][]byte, readBatch),
		sizes: make([]int, readBatch),
	}
	for i := range v.ring {
		v.ring[i] = pool.Get()
		v.bufs[i], _ = v.ring[i].Buffer()
	}
	return v
}

func (v *vnetIngress) read(l *loop) (int, error) {
	k := len(v.bufs)
	if l.lastNext != clock.Never && time.Duration(l.lastNext-l.clk.Now()) < closeDeadline {
		k = 1 // a release is due soon: do not let a batch of reads delay it
	}
	n, err := v.dev.TryRead(v.bufs[:k], v.sizes, headroom)
	now := l.clk.Now()
	for i := range n {
		p := v.ring[i]
		p.SetData(headroom, v.sizes[i])
		if l.arrive(now, p, true) {
			v.ring[i] = l.large.Get()
			v.bufs[i], _ = v.ring[i].Buffer()
		}
	}
	return n, err
}

// closeDeadline is how near the next deadline must be for the loop to read
// one packet per pass instead of a batch.
const closeDeadline = 20 * time.Microsecond

func (v *vnetIngress) wait(l *loop, timeout time.Duration) (event, woken bool, err error) {
	readable, woken, err := v.dev.Wait(l.wake, timeout)
	return readable || woken, woken, err
}

func (v *vnetIngress) close() {}

// vnetEgress writes to a VNet device with the virtio-net header the kernel
// gave each packet, or zeros for a packet the router split or completed.
// Where the device takes USO, consecutive UDP datagrams of one flow that
// leave in the same release pass go in one super-packet (see usoBatch);
// every other packet gets a system call of its own.
type vnetEgress struct {
	dev        tun.VNetDevice
	uso4, uso6 bool
	batch      *usoBatch
}

// TUNSETOFFLOAD flags for USO (TUN_F_USO4, TUN_F_USO6 in
// include/uapi/linux/if_tun.h), as tun.VNetDevice.Offloads reports them.
const (
	tunUSO4 = 0x20
	tunUSO6 = 0x40
)

func newVNetEgress(dev tun.VNetDevice) *vnetEgress {
	off := dev.Offloads()
	return &vnetEgress{dev: dev, uso4: off&tunUSO4 != 0, uso6: off&tunUSO6 != 0, batch: newUSOBatch()}
}

func (e *vnetEgress) write(l *loop, p *packet.Packet, deadline clock.Time) {
	if e.uso4 || e.uso6 {
		if d, ok := usoCandidate(p); ok && (d.v6 && e.uso6 || !d.v6 && e.uso4) {
			if !e.batch.add(p, d, deadline) {
				e.flush(l)
				e.batch.add(p, d, deadline)
			}
			return
		}
	}
	e.flush(l)
	e.writeOne(l, p, deadline)
}

// writeOne writes p with a system call of its own.
func (e *vnetEgress) writeOne(l *loop, p *packet.Packet, deadline clock.Time) {
	buf, off := p.Buffer()
	if !tagHasVNet(p) {
		clear(buf[off-tun.VNetHdrLen : off])
	}
	t := l.leaving(deadline)
	errno := e.dev.WriteOne(buf[:off+p.Len()], off)
	if errno == 0 {
		l.capture(p, t)
	}
	l.wrote(p, errno)
	p.Free()
}

// flush writes the batch gathered so far.
func (e *vnetEgress) flush(l *loop) {
	u := e.batch
	switch len(u.pkts) {
	case 0:
		return
	case 1:
		e.writeOne(l, u.pkts[0], u.dls[0])
		u.reset()
		return
	}
	b := u.build()
	t := l.clk.Now()
	errno := e.dev.WriteOne(b, headroom)
	if errno == syscall.EINVAL {
		// A kernel that refuses the super-packet gets no more of them.
		e.uso4, e.uso6 = false, false
		for i, p := range u.pkts {
			e.writeOne(l, p, u.dls[i])
		}
		u.reset()
		return
	}
	for i, p := range u.pkts {
		l.late.Add(int64(t - u.dls[i]))
		if errno == 0 {
			l.capture(p, t)
		}
		l.wrote(p, errno)
		p.Free()
	}
	l.uso.writes++
	l.uso.datagrams += uint64(len(u.pkts))
	u.reset()
}

// chanIngress reads any Device on a goroutine of its own (the Device
// interface blocks) and hands batches to the loop, signalling its wake
// eventfd for each.
type chanIngress struct {
	dev   tun.Device
	clk   *clock.Real
	full  chan *rbatch
	free  chan *rbatch
	errc  chan error
	done  chan struct{}
	stage *packet.Packet // large packet the loop copies each one into

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

func newChanIngress(dev tun.Device, wake int, clk *clock.Real) *chanIngress {
	c := &chanIngress{
		dev:  dev,
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
		if err != nil && !errors.Is(err, tun.ErrTooManySegments) {
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

func (c *chanIngress) read(l *loop) (int, error) {
	total := 0
	for range chanBatches {
		select {
		case b := <-c.full:
			for i := range b.n {
				if c.stage == nil {
					c.stage = l.large.Get()
				}
				sz := b.sizes[i]
				buf, off := c.stage.Buffer()
				copy(buf[off:], b.bufs[i][chanOffset:chanOffset+sz])
				c.stage.SetLen(sz)
				if l.arrive(b.at, c.stage, false) {
					c.stage = nil
				}
			}
			total += b.n
			c.free <- b
		default:
			select {
			case err := <-c.errc:
				return total, err
			default:
			}
			return total, nil
		}
	}
	return total, nil
}

func (c *chanIngress) wait(l *loop, timeout time.Duration) (event, woken bool, err error) {
	woken, err = pollWake(l.wake, timeout)
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

func (e *batchEgress) write(l *loop, p *packet.Packet, deadline clock.Time) {
	e.pend = append(e.pend, p)
	e.at = append(e.at, deadline)
	if len(e.pend) == cap(e.pend) {
		e.flush(l)
	}
}

func (e *batchEgress) flush(l *loop) {
	k := len(e.pend)
	if k == 0 {
		return
	}
	t := l.clk.Now()
	for i, p := range e.pend {
		l.late.Add(int64(t - e.at[i]))
		// Captured before Write, which may coalesce packets in place.
		l.capture(p, t)
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
			l.wrote(p, 0)
		} else {
			l.wrote(p, errno)
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
