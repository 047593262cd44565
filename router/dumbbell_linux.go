package router

import (
	"time"

	"wanlab/clock"
	"wanlab/packet"
	"wanlab/tun"
)

// attachHosts gives a loop of many hosts its ingress, which reads every
// sending host's VNet TUN, and an egress per receiving host.
func (l *loop) attachHosts(h *dirHosts) error {
	devs := make([]tun.VNetDevice, len(h.in))
	for i, x := range h.in {
		devs[i] = x.Device.(tun.VNetDevice) // checkHosts checked
	}
	set, err := openSet(devs)
	if err != nil {
		return err
	}
	l.in = newMultiIngress(devs, set, l.large, l)
	l.vnet, l.outGSO = true, true
	for _, x := range h.out {
		l.outs = append(l.outs, newVNetEgress(x.Device.(tun.VNetDevice)))
	}
	return nil
}

// deviceSet waits on several devices at once (tun.VNetSet).
type deviceSet interface {
	Wait(wake int, timeout time.Duration) (woken bool, err error)
	Readable(i int) bool
}

// openSet makes the deviceSet of a loop's ingress devices (tests of fake
// devices replace it).
var openSet = func(devs []tun.VNetDevice) (deviceSet, error) {
	s, err := tun.NewVNetSet(devs)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// multiIngress reads the VNet TUNs of several hosts on the loop's thread:
// it waits on all of them at once (one ppoll, deviceSet) and reads those
// that are readable in turn, one packet from each, starting each pass
// after the device the last pass ended at, so that a host that always has
// packets waiting cannot keep the others' from being read. Each packet is
// handed on with its ingress port, the index of its device (portArriver).
type multiIngress struct {
	ins   []*vnetIngress // one read ring of one packet each
	ports []portArriver
	set   deviceSet
	ready []bool
	fresh bool // ready is what the last wait found, not yet read
	next  int  // the device the next pass starts at
}

func newMultiIngress(devs []tun.VNetDevice, set deviceSet, pool *packet.Pool, l *loop) *multiIngress {
	m := &multiIngress{set: set, ready: make([]bool, len(devs)), ports: make([]portArriver, len(devs))}
	for i, d := range devs {
		// One packet per read: the rings of 16 hosts would hold 128
		// buffers of 64 KiB otherwise.
		v := newVNetIngress(d, pool, l.clk, 1)
		m.ins = append(m.ins, v)
		m.ports[i] = portArriver{port: uint8(i)}
	}
	return m
}

// portArriver hands the packets of one ingress device on to the loop,
// each marked with the device's port.
type portArriver struct {
	arriver
	port uint8
}

func (a *portArriver) arrive(now clock.Time, p *packet.Packet, vnet bool, l2 uint16) bool {
	p.InPort = a.port
	return a.arriver.arrive(now, p, vnet, l2)
}

func (m *multiIngress) read(k int, to arriver) (int, bool, error) {
	if !m.fresh {
		// The loop is spinning, not waiting: look which devices have
		// packets, without waiting.
		if _, err := m.set.Wait(-1, 0); err != nil {
			return 0, false, err
		}
		m.mark()
	}
	m.fresh = false
	n := 0
	for n < k {
		took := false
		for j := range m.ins {
			i := (m.next + j) % len(m.ins)
			if !m.ready[i] {
				continue
			}
			a := &m.ports[i]
			a.arriver = to
			got, _, err := m.ins[i].read(1, a)
			if err != nil {
				return n + got, false, err
			}
			if got == 0 {
				m.ready[i] = false
				continue
			}
			n, took = n+1, true
			if n == k || to.enough() {
				m.next = (i + 1) % len(m.ins)
				return n, true, nil
			}
		}
		if !took {
			return n, false, nil
		}
	}
	return n, true, nil
}

// mark copies the set's readiness.
func (m *multiIngress) mark() {
	for i := range m.ready {
		m.ready[i] = m.set.Readable(i)
	}
}

func (m *multiIngress) wait(wake int, timeout time.Duration) (event, woken bool, err error) {
	woken, err = m.set.Wait(wake, timeout)
	if err != nil {
		return false, false, err
	}
	m.mark()
	m.fresh = true
	event = woken
	for _, r := range m.ready {
		event = event || r
	}
	return event, woken, nil
}

func (m *multiIngress) close() {}
