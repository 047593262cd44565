// Package packet holds wanlab's packet buffers and read-only views of the
// IP, TCP, UDP and ICMP headers they carry.
//
// A Packet is a byte buffer with headroom (so that a TUN virtio header or a
// tunnel header can be prepended without copying) plus the metadata that the
// emulation core needs: arrival and departure times, a flow hash, the
// simulator's flow and sequence number. Packets come from a Pool that counts
// how many are live, so tests can assert that nothing leaks.
package packet

import (
	"fmt"

	"wanlab/clock"
)

// DefaultHeadroom is the space reserved in front of the data of every pooled
// buffer: enough for a virtio-net header and an outer IPv6+UDP header.
const DefaultHeadroom = 64

// Packet is one IP packet (or one GSO super-packet of Segs segments) and the
// metadata the emulator keeps about it. The zero value is not usable: get
// packets from a Pool.
type Packet struct {
	buf  []byte // whole buffer, headroom included
	off  int    // start of the IP header in buf
	n    int    // bytes of data from off
	pool *Pool
	live bool

	// Arrival is when the packet entered the direction (link) it is crossing.
	Arrival clock.Time
	// Enqueued is when the current qdisc accepted it (sojourn time reference
	// for CoDel, PIE, ...). Each qdisc that needs it overwrites it.
	Enqueued clock.Time
	// TimeToSend is netem's departure time (tts).
	TimeToSend clock.Time
	// Order breaks ties between equal TimeToSend values (stable insertion).
	Order uint64

	// Hash is a flow hash of the 5-tuple, direction-symmetric; 0 means "not
	// computed yet".
	Hash uint32
	// Flow and Seq identify the packet in the simulator (and in the router's
	// per-flow counters); they are not written to the wire.
	Flow int32
	Seq  int64
	// Segs is the number of wire segments this buffer stands for (1 unless it
	// is a GSO super-packet).
	Segs int32
	// SegSize is a super-packet's payload bytes in every segment but the
	// last (its gso_size); SegHdr is the IP and transport header bytes at
	// the front of every segment (0 when not known). Segments, WireLen and
	// SegmentLen derive the segments from them.
	SegSize, SegHdr int32
	// VNet records that the VirtioNetHdrLen bytes in front of the data hold
	// the packet's virtio_net_hdr, which says how to segment it and
	// whether its transport checksum is complete. A super-packet (Segs > 1)
	// always has one; Cut, Clone and FinishChecksum keep it right.
	VNet bool
	// Dup marks a netem duplicate, which is never duplicated again.
	Dup bool
	// Marked records that the emulator set CE on this packet.
	Marked bool
	// Corrupted records that netem flipped a bit in this packet.
	Corrupted bool
	// Reordered records that netem sent this packet ahead of its queue.
	Reordered bool
	// InPort and OutPort are the ports of a path of several links
	// (link.Path) the packet entered by and leaves by: the sending and
	// the receiving host of a dumbbell. They ride with the packet, as its
	// copies (netem's duplicates, the parts of a cut super-packet) must
	// leave by the same port.
	InPort, OutPort uint8
	// PathArrival is when the packet entered that path; Arrival is when
	// it entered the link of the path it is crossing now.
	PathArrival clock.Time
	// Tag is free for the owner of the packet (the router, the simulator).
	Tag uint64
}

// Bytes returns the packet's data (the IP header onwards).
func (p *Packet) Bytes() []byte { return p.buf[p.off : p.off+p.n] }

// Len returns the number of data bytes: the IP total length on TUN, which is
// what Linux's qdisc_pkt_len counts on a TUN device.
func (p *Packet) Len() int { return p.n }

// Segments returns the wire segments p stands for: Segs, at least 1.
func (p *Packet) Segments() int {
	if p.Segs < 1 {
		return 1
	}
	return int(p.Segs)
}

// WireLen returns the IP bytes of all of p's wire segments: Len, plus the
// headers every segment after the first repeats.
func (p *Packet) WireLen() int {
	if p.Segs <= 1 {
		return p.n
	}
	return p.n + int(p.Segs-1)*int(p.SegHdr)
}

// SegmentLen returns the IP length of segment i (from 0) of p: SegHdr plus
// SegSize payload bytes, the last segment what remains. For a packet that
// is no super-packet it is Len.
func (p *Packet) SegmentLen(i int) int {
	if p.Segs <= 1 {
		return p.n
	}
	rest := p.n - int(p.SegHdr) - i*int(p.SegSize)
	return int(p.SegHdr) + min(int(p.SegSize), rest)
}

// Headroom returns how many bytes can be prepended without copying.
func (p *Packet) Headroom() int { return p.off }

// Cap returns the largest data length the buffer can hold at the current
// headroom.
func (p *Packet) Cap() int { return len(p.buf) - p.off }

// SetLen sets the data length; it panics if n exceeds Cap.
func (p *Packet) SetLen(n int) {
	if n < 0 || n > p.Cap() {
		panic(fmt.Sprintf("packet: SetLen(%d) outside [0,%d]", n, p.Cap()))
	}
	p.n = n
}

// Buffer returns the whole underlying buffer and the offset of the data in
// it, for batch I/O that reads into the buffer at a fixed offset.
func (p *Packet) Buffer() ([]byte, int) { return p.buf, p.off }

// SetData declares that the data now starts at off and is n bytes long.
func (p *Packet) SetData(off, n int) {
	if off < 0 || n < 0 || off+n > len(p.buf) {
		panic(fmt.Sprintf("packet: SetData(%d,%d) outside buffer of %d", off, n, len(p.buf)))
	}
	p.off, p.n = off, n
}

// Free returns the packet to its pool. Using a packet after Free is a bug.
func (p *Packet) Free() {
	if p.pool == nil {
		return
	}
	p.pool.Put(p)
}

// reset clears the metadata for reuse.
func (p *Packet) reset(headroom int) {
	buf, pool := p.buf, p.pool
	*p = Packet{buf: buf, pool: pool, off: headroom, Segs: 1}
}

// Pool hands out packets with buffers of one size and counts how many are
// live. It is not safe for concurrent use; give each goroutine its own pool
// or guard it.
type Pool struct {
	free     []*Packet
	size     int
	headroom int
	live     int
	made     int
}

// NewPool returns a pool of buffers of size bytes (headroom included), with
// headroom bytes reserved before the data.
func NewPool(size, headroom int) *Pool {
	if headroom < 0 || headroom >= size {
		panic(fmt.Sprintf("packet: NewPool(%d,%d): headroom must be in [0,size)", size, headroom))
	}
	return &Pool{size: size, headroom: headroom}
}

// Get returns a packet with empty data, DefaultHeadroom-style headroom, Segs
// = 1 and all metadata cleared.
func (pl *Pool) Get() *Packet {
	var p *Packet
	if n := len(pl.free); n > 0 {
		p = pl.free[n-1]
		pl.free = pl.free[:n-1]
	} else {
		p = &Packet{buf: make([]byte, pl.size), pool: pl}
		pl.made++
	}
	p.reset(pl.headroom)
	p.live = true
	pl.live++
	return p
}

// Put returns p to the pool. It panics on a double free, which would
// otherwise corrupt two packets silently.
func (pl *Pool) Put(p *Packet) {
	if p.pool != pl {
		panic("packet: Put of a packet from another pool")
	}
	if !p.live {
		panic("packet: double free")
	}
	p.live = false
	pl.live--
	pl.free = append(pl.free, p)
}

// Clone returns a copy of p (data, metadata and, with VNet, the
// virtio_net_hdr in front of the data) in a buffer of pl. It panics if p
// cannot fit in pl's buffers.
func (pl *Pool) Clone(p *Packet) *Packet {
	front := 0
	if p.VNet {
		front = VirtioNetHdrLen
	}
	if p.n+front > pl.size {
		panic(fmt.Sprintf("packet: Clone of a %d-byte packet into a pool of %d-byte buffers", p.n+front, pl.size))
	}
	c := pl.Get()
	c.off = max(p.off, front)
	if c.off+p.n > len(c.buf) {
		c.off = front
	}
	copy(c.buf[c.off-front:], p.buf[p.off-front:p.off+p.n])
	buf, off, pool := c.buf, c.off, c.pool
	*c = *p
	c.buf, c.off, c.pool, c.live = buf, off, pool, true
	return c
}

// Live returns the number of packets handed out and not yet returned.
func (pl *Pool) Live() int { return pl.live }

// Allocated returns how many packets the pool has ever allocated.
func (pl *Pool) Allocated() int { return pl.made }

// BufferSize returns the size of each buffer, headroom included.
func (pl *Pool) BufferSize() int { return pl.size }
