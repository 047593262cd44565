package sim

import (
	"math/bits"
	"math/rand/v2"

	"wanlab/clock"
	"wanlab/link"
	"wanlab/packet"
)

// source emits the packets of one flow.
type source struct {
	flow  int32
	dir   int
	in    int // the path's ingress and egress ports: the sender's and receiver's
	out   int
	size  int
	count int64 // 0 = no limit
	hdr   packet.UDP4
	next  clock.Time // time of packet seq, Never when done
	seq   int64

	// CBR: packet k leaves at start + floor(k·num/rate) ns.
	start clock.Time
	num   uint64 // Size·1e9
	rate  uint64

	// Poisson: a running time in float ns and the mean gap.
	rng  *rand.Rand
	at   float64
	mean float64
}

// Addresses of the simulated client and server (c1 and s1; see hostAddr).
var (
	clientAddr = [4]byte{10, 0, 0, 2}
	serverAddr = [4]byte{10, 0, 1, 2}
)

// hostAddr returns the address of host h: 10.0.0.(N+1) for client N,
// 10.0.1.(N+1) for server N.
func hostAddr(h link.Host) [4]byte {
	a := clientAddr
	if h.Server {
		a = serverAddr
	}
	a[3] = byte(h.N + 1)
	return a
}

// hostOf returns the host among n clients (or servers) whose address a
// is, or the first one if none has it: a flow with an address of no
// host crosses the path of the first.
func hostOf(a [4]byte, server bool, n int) link.Host {
	h := link.Host{Server: server, N: 1}
	if k := int(a[3]) - 1; k >= 1 && k <= n && hostAddr(link.Host{Server: server, N: k}) == a {
		h.N = k
	}
	return h
}

// newSource returns the source of flow i, f, between c1 and s1 until
// route says otherwise.
func newSource(i int, f Flow, seed uint64) *source {
	c := f.base()
	s := &source{
		flow:  int32(i),
		dir:   c.dir(),
		size:  c.Size,
		count: c.Count,
		start: clock.Time(c.Start),
		num:   uint64(c.Size) * 1e9,
		rate:  uint64(c.Rate),
	}
	// Each flow has its own ports, so that flow-hashing disciplines
	// (fq_codel) tell them apart.
	s.hdr = packet.UDP4{Src: clientAddr, Dst: serverAddr, SrcPort: 10000 + uint16(i), DstPort: 20000 + uint16(i), TOS: c.TOS&^3 | uint8(c.ECN&3)}
	if s.dir == 1 {
		s.hdr.Src, s.hdr.Dst = s.hdr.Dst, s.hdr.Src
		s.hdr.SrcPort, s.hdr.DstPort = s.hdr.DstPort, s.hdr.SrcPort
	}
	if c.Src.IsValid() {
		s.hdr.Src = c.Src.As4()
	}
	if c.Dst.IsValid() {
		s.hdr.Dst = c.Dst.As4()
	}
	if c.SrcHost.N > 0 {
		s.hdr.Src = hostAddr(c.SrcHost)
	}
	if c.DstHost.N > 0 {
		s.hdr.Dst = hostAddr(c.DstHost)
	}
	if f.poisson() {
		s.rng = rand.New(rand.NewPCG(seed, uint64(i)))
		s.mean = float64(s.num) / float64(s.rate)
		s.at = float64(s.start)
	}
	s.schedule()
	return s
}

// route sets the ports of the source's packets on a dumbbell of that many
// clients and servers: its sender's and its receiver's, by their
// addresses, as the router decides by a packet's addresses.
func (s *source) route(clients, servers int) {
	up := s.dir == 0
	nSrc, nDst := clients, servers
	if !up {
		nSrc, nDst = servers, clients
	}
	s.in = hostOf(s.hdr.Src, !up, nSrc).Port()
	s.out = hostOf(s.hdr.Dst, up, nDst).Port()
}

// schedule sets next to the send time of packet seq.
func (s *source) schedule() {
	if s.count > 0 && s.seq >= s.count {
		s.next = clock.Never
		return
	}
	if s.rng != nil {
		s.at += s.rng.ExpFloat64() * s.mean
		if s.at >= float64(clock.Never) {
			s.next = clock.Never
			return
		}
		s.next = clock.Time(s.at)
		return
	}
	hi, lo := bits.Mul64(uint64(s.seq), s.num)
	if hi >= s.rate {
		s.next = clock.Never
		return
	}
	q, _ := bits.Div64(hi, lo, s.rate)
	if q >= uint64(clock.Never-s.start) {
		s.next = clock.Never
		return
	}
	s.next = s.start + clock.Time(q)
}

// emit writes packet seq into p and moves on to the next one.
func (s *source) emit(p *packet.Packet) {
	p.SetLen(s.size)
	s.hdr.ID = uint16(s.seq)
	packet.WriteUDP4(p.Bytes(), s.hdr, s.size)
	p.Flow, p.Seq = s.flow, s.seq
	s.seq++
	s.schedule()
}

// sources is a binary min-heap of sources by (next, flow), so that ties go
// to the lower flow number and runs are reproducible.
type sources []*source

func (h sources) less(i, j int) bool {
	return h[i].next < h[j].next || (h[i].next == h[j].next && h[i].flow < h[j].flow)
}

func (h sources) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h sources) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
