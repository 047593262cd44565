package router

import (
	"bytes"
	"encoding/binary"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/link"
	"wanlab/packet"
	"wanlab/packetsock"
	"wanlab/qdisc"
	"wanlab/tun"
)

// fakeFrame is one frame of a fakeFrames: its Ethernet header, the
// virtio-net header and the packet after the Ethernet header.
type fakeFrame struct{ mac, vnet, pkt []byte }

// fakeFrames is an in-memory frameDevice: TryRead hands out copies of a
// fixed set of frames in turn, perRead at a time, each stamped with
// stamp() (the present when nil); WriteOne keeps what it is given when
// keep is set and counts it.
type fakeFrames struct {
	frames  []fakeFrame
	next    int
	perRead int
	budget  int // frames left to hand out; <0 without limit
	stamp   func() int64
	offload packetsock.Offload
	keep    bool
	got     []fakeFrame
	written int
}

func (f *fakeFrames) Name() string { return "fake-frames" }

func (f *fakeFrames) TryRead(bufs [][]byte, frames []packetsock.Frame, offset int) (int, error) {
	n := 0
	for n < len(bufs) && n < f.perRead && f.budget != 0 && len(f.frames) > 0 {
		fr := f.frames[f.next]
		f.next = (f.next + 1) % len(f.frames)
		copy(bufs[n][offset-tun.VNetHdrLen:], fr.vnet)
		copy(bufs[n][offset:], fr.pkt)
		t := time.Now().UnixNano()
		if f.stamp != nil {
			t = f.stamp()
		}
		frames[n] = packetsock.Frame{Len: len(fr.pkt), MACLen: len(fr.mac), Time: t}
		copy(frames[n].MAC[:], fr.mac)
		n++
		if f.budget > 0 {
			f.budget--
		}
	}
	return n, nil
}

func (f *fakeFrames) Wait(int, time.Duration) (bool, bool, error) { return true, false, nil }

func (f *fakeFrames) WriteOne(mac, b []byte, offset int) syscall.Errno {
	if len(mac) < 14 {
		return syscall.EINVAL
	}
	f.written++
	if f.keep {
		f.got = append(f.got, fakeFrame{mac: bytes.Clone(mac), vnet: bytes.Clone(b[offset-tun.VNetHdrLen : offset]), pkt: bytes.Clone(b[offset:])})
	}
	return 0
}

func (f *fakeFrames) Offloads() packetsock.Offload { return f.offload }

var _ frameDevice = (*fakeFrames)(nil)

const allOffloads = packetsock.TSO4 | packetsock.TSO6 | packetsock.USO

// fakeFrameRouter builds a router between two fake packet sockets whose
// interfaces segment every kind of super-packet; client hands out frames.
// The loops are stepped by the caller.
func fakeFrameRouter(t testing.TB, upChain string, frames []fakeFrame) (*Router, *fakeFrames, *fakeFrames) {
	t.Helper()
	return fakeFrameRouterTo(t, upChain, frames, allOffloads)
}

// fakeFrameRouterTo is fakeFrameRouter with a server whose interface
// segments the super-packets of off.
func fakeFrameRouterTo(t testing.TB, upChain string, frames []fakeFrame, off packetsock.Offload) (*Router, *fakeFrames, *fakeFrames) {
	t.Helper()
	c := &fakeFrames{frames: frames, perRead: readBatch, budget: -1, offload: allOffloads}
	s := &fakeFrames{perRead: readBatch, offload: off, keep: true}
	r, err := New(Config{Up: link.Config{Chain: mustChain(t, upChain), Env: qdisc.Env{Seed: 1}}, Client: c, Server: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.up.close(); r.down.close() })
	return r, c, s
}

// ether returns an Ethernet header from the host numbered src to dst
// (02:00:00:00:00:NN, ff for broadcast), of EtherType typ, with VLAN tag
// vid unless it is 0.
func ether(dst, src byte, vid uint16, typ uint16) []byte {
	h := []byte{2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src}
	if dst == 0xff {
		copy(h, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	}
	if vid != 0 {
		h = binary.BigEndian.AppendUint16(h, 0x8100)
		h = binary.BigEndian.AppendUint16(h, vid)
	}
	return binary.BigEndian.AppendUint16(h, typ)
}

// udpFrame returns a frame with header mac around udpDatagram's datagram
// from port sport.
func udpFrame(mac []byte, sport uint16) fakeFrame {
	d := udpDatagram(false, sport, sport, 100, byte(sport))
	return fakeFrame{mac: mac, vnet: d[:tun.VNetHdrLen], pkt: d[tun.VNetHdrLen:]}
}

// arpFrame returns an ARP request with header mac.
func arpFrame(mac []byte) fakeFrame {
	p := make([]byte, 28)
	copy(p, []byte{0, 1, 8, 0, 6, 4, 0, 1})
	return fakeFrame{mac: mac, vnet: make([]byte, tun.VNetHdrLen), pkt: p}
}

// TestFramesKeepTheirHeaders sends the frames of two UDP flows with
// headers of their own (one tagged) through a netem that duplicates, and
// ARP requests: each packet leaves with the header it came with,
// duplicates too, and the ARP requests cross at once, counted, outside the
// link.
func TestFramesKeepTheirHeaders(t *testing.T) {
	hA, hB, hARP := ether(2, 1, 0, etherIPv4), ether(2, 3, 7, etherIPv4), ether(0xff, 1, 0, 0x0806)
	r, c, s := fakeFrameRouter(t, "netem delay 1ms duplicate 50%", []fakeFrame{udpFrame(hA, 1001), udpFrame(hB, 1002), arpFrame(hARP)})
	c.budget = 30
	for end := time.Now().Add(2 * time.Second); s.written < 30 && time.Now().Before(end); {
		step(r.up)
	}
	for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
		step(r.up) // the last duplicates
	}
	snap := r.Snapshot().Up
	var arps, ips int
	for i, f := range s.got {
		want := hARP
		if binary.BigEndian.Uint16(f.mac[len(f.mac)-2:]) != 0x0806 {
			ips++
			want = map[uint16][]byte{1001: hA, 1002: hB}[binary.BigEndian.Uint16(f.pkt[20:])]
		} else {
			arps++
			if !bytes.Equal(f.pkt, arpFrame(nil).pkt) {
				t.Errorf("frame %d: ARP payload % x", i, f.pkt)
			}
		}
		if !bytes.Equal(f.mac, want) {
			t.Errorf("frame %d (% x...): header % x, want % x", i, f.pkt[:min(len(f.pkt), 24)], f.mac, want)
		}
	}
	dups := int(snap.Counters.Duplicated)
	if arps != 10 || ips != 20+dups || dups == 0 {
		t.Errorf("server got %d ARP requests and %d IP packets (%d duplicates); want 10 and 20 + the duplicates, some", arps, ips, dups)
	}
	if n := snap.NonIP; n == nil || n.Frames != 10 || n.Bytes != 10*(14+28) || n.Refused != 0 {
		t.Errorf("NonIP %+v, want 10 frames of 42 bytes", n)
	}
	if snap.Counters.Sent != 20 || snap.Malformed != 0 {
		t.Errorf("the link took %d packets (%d malformed), want the 20 IP ones", snap.Counters.Sent, snap.Malformed)
	}
}

// TestFrameSuperPackets sends TCP super-packets through a jittered netem,
// which cuts them, to an interface that segments them and to one that
// does not: each part, and each segment split before the link where the
// interface cannot take super-packets, leaves with the header the
// super-packet came with.
func TestFrameSuperPackets(t *testing.T) {
	const payload, mss = 30000, 1448
	segs := (payload + mss - 1) / mss
	h := ether(2, 3, 7, etherIPv4)
	hdr, pkt := tcpSuper(false, payload, mss, 0x10)
	for _, off := range []packetsock.Offload{allOffloads, packetsock.USO} {
		r, c, s := fakeFrameRouterTo(t, "netem limit 100000 delay 1us 1us", []fakeFrame{{mac: h, vnet: hdr, pkt: pkt}}, off)
		c.budget = 10
		got := 0
		for end := time.Now().Add(2 * time.Second); got < 10*segs && time.Now().Before(end); {
			step(r.up)
			got = 0
			for _, f := range s.got {
				if g, err := inspect(f.pkt, mustHdr(t, f.vnet)); err == nil {
					got += g.segs
				}
			}
		}
		snap := r.Snapshot().Up
		if got != 10*segs || snap.GSO.Whole != (off == allOffloads) {
			t.Errorf("offloads %#x: %d segments arrived in %d writes (whole %v), want %d", off, got, len(s.got), snap.GSO.Whole, 10*segs)
		}
		for i, f := range s.got {
			if !bytes.Equal(f.mac, h) {
				t.Fatalf("offloads %#x: write %d: header % x, want % x", off, i, f.mac, h)
			}
			if hd := mustHdr(t, f.vnet); off != allOffloads && hd.GSOType != packet.GSONone {
				t.Errorf("offloads %#x: write %d is a super-packet (%+v) for an interface that does not take them", off, i, hd)
			}
		}
	}
}

func mustHdr(t *testing.T, b []byte) packet.VirtioNetHdr {
	t.Helper()
	h, err := packet.DecodeVirtioNetHdr(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFrameArrivalIsTheKernels hands over frames the kernel stamped before
// they were read: each enters the link at its stamp, so that it leaves
// when its delay since then has passed, the time it waited in the ring
// shows, and a release that comes too late for it counts as late. A stamp
// after the read counts as the read.
func TestFrameArrivalIsTheKernels(t *testing.T) {
	const delay = 10 * time.Millisecond
	for _, tc := range []struct {
		name    string
		before  time.Duration // how long before its read the kernel stamped a frame
		wait    time.Duration // the ring wait expected
		minLate time.Duration // the release lateness at least expected
	}{
		{"5ms before", 5 * time.Millisecond, 5 * time.Millisecond, 0},
		{"25ms before", 25 * time.Millisecond, 25 * time.Millisecond, 15 * time.Millisecond},
		{"1s after", -time.Second, 0, 0},
	} {
		roottest.Twice(t, tc.name, func(rep roottest.Reporter) {
			r, c, s := fakeFrameRouter(t, "netem delay 10ms", []fakeFrame{udpFrame(ether(2, 1, 0, etherIPv4), 1001)})
			c.perRead, c.budget = 1, 5
			c.stamp = func() int64 { return time.Now().Add(-tc.before).UnixNano() }
			// No frame arrives before the router's start, time 0 on
			// its clock: let the stamps come after it.
			time.Sleep(tc.before)
			for end := time.Now().Add(time.Second); s.written < 5 && time.Now().Before(end); {
				step(r.up)
				time.Sleep(time.Millisecond)
			}
			snap := r.Snapshot().Up
			d, w, late := snap.Counters.Delay, snap.Ring.Wait, snap.Lateness
			rep.Logf("%s: delay min %.2f mean %.2f ms, ring wait %+v, lateness %+v", tc.name, d.Min/1e6, d.Mean/1e6, w, late)
			// The link's delay runs from the kernel's stamp: the
			// configured delay, or the ring wait when that was
			// longer; 3 ms more is the machine's noise, not the
			// ring wait a read-time stamp would hide or add.
			want := max(delay, tc.wait)
			if s.written != 5 || time.Duration(d.Min) < want || time.Duration(d.Mean) > want+3*time.Millisecond {
				rep.Errorf("%s: %d delivered, delay min %.2f mean %.2f ms; want 5, from %v to %v", tc.name, s.written, d.Min/1e6, d.Mean/1e6, want, want+3*time.Millisecond)
			}
			if w == nil || time.Duration(w.P50Ns) < tc.wait || time.Duration(w.P50Ns) > tc.wait+3*time.Millisecond {
				rep.Errorf("%s: ring wait %+v, want about %v", tc.name, w, tc.wait)
			}
			if time.Duration(late.P50Ns) < tc.minLate {
				rep.Errorf("%s: lateness %+v, want at least %v", tc.name, late, tc.minLate)
			}
		})
	}
}

// TestFrameLoopAllocatesNothing steps a loop that reads frames, runs them
// through a delay and writes them, and counts its allocations.
func TestFrameLoopAllocatesNothing(t *testing.T) {
	r, c, s := fakeFrameRouter(t, "netem delay 100us", []fakeFrame{udpFrame(ether(2, 1, 0, etherIPv4), 1001), arpFrame(ether(0xff, 1, 0, 0x0806))})
	s.keep = false
	c.perRead = 2
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		step(r.up) // fill the pools and the delay line
	}
	if a := testing.AllocsPerRun(200, func() { step(r.up) }); a != 0 {
		t.Errorf("%v allocations per pass", a)
	}
}

// TestPlanesDoNotMix refuses a packet socket on one side and a TUN on the
// other.
func TestPlanesDoNotMix(t *testing.T) {
	_, err := New(Config{Client: &fakeFrames{}, Server: &fakeVNet{}})
	if err == nil || !strings.Contains(err.Error(), "packet socket") {
		t.Errorf("New with a packet socket and a TUN: %v", err)
	}
}
