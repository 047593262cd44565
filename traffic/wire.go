package traffic

import (
	"encoding/binary"

	"wanlab/clock"
)

// The payloads wanlab's UDP generators put on the wire, big-endian. Both
// start with a magic number and a per-flow cookie, so that a stray
// datagram (or one of another flow) is never counted.
//
// A UDP probe and its reply (probeHeaderLen bytes, then padding):
//
//	0  magic "wlpr"      4  cookie       8  seq
//	12 kind (1 request, 2 reply)         13 flags (bit 0: tos valid)
//	14 tos the server received           15 reserved
//	16 client send time  24 server receive time  32 server send time
//
// A UDP flood packet (floodHeaderLen bytes, then padding):
//
//	0  magic "wlfl"      4  cookie       8  seq (64 bits)   16 send time
//
// Times are readings of the run's clock in nanoseconds: sender and
// receiver are one process.
const (
	probeMagic     = 0x776c7072 // "wlpr"
	floodMagic     = 0x776c666c // "wlfl"
	probeHeaderLen = 40
	floodHeaderLen = 24

	probeRequest = 1
	probeReply   = 2
)

// probeHeader is the header of a UDP probe or its reply.
type probeHeader struct {
	cookie     uint32
	seq        uint32
	kind       uint8
	tos        int // the TOS byte the server saw; -1 if unknown
	clientSend clock.Time
	serverRecv clock.Time
	serverSend clock.Time
}

// encode writes h to the start of b, which has room for probeHeaderLen
// bytes.
func (h *probeHeader) encode(b []byte) {
	_ = b[probeHeaderLen-1]
	binary.BigEndian.PutUint32(b[0:], probeMagic)
	binary.BigEndian.PutUint32(b[4:], h.cookie)
	binary.BigEndian.PutUint32(b[8:], h.seq)
	b[12] = h.kind
	b[13], b[14], b[15] = 0, 0, 0
	if h.tos >= 0 {
		b[13], b[14] = 1, byte(h.tos)
	}
	binary.BigEndian.PutUint64(b[16:], uint64(h.clientSend))
	binary.BigEndian.PutUint64(b[24:], uint64(h.serverRecv))
	binary.BigEndian.PutUint64(b[32:], uint64(h.serverSend))
}

// decodeProbe reads a probe header; ok is false if b is not one.
func decodeProbe(b []byte) (h probeHeader, ok bool) {
	if len(b) < probeHeaderLen || binary.BigEndian.Uint32(b) != probeMagic {
		return h, false
	}
	h.cookie = binary.BigEndian.Uint32(b[4:])
	h.seq = binary.BigEndian.Uint32(b[8:])
	h.kind = b[12]
	h.tos = -1
	if b[13]&1 != 0 {
		h.tos = int(b[14])
	}
	h.clientSend = clock.Time(binary.BigEndian.Uint64(b[16:]))
	h.serverRecv = clock.Time(binary.BigEndian.Uint64(b[24:]))
	h.serverSend = clock.Time(binary.BigEndian.Uint64(b[32:]))
	return h, h.kind == probeRequest || h.kind == probeReply
}

// putFlood writes a flood header to the start of b, which has room for
// floodHeaderLen bytes.
func putFlood(b []byte, cookie uint32, seq uint64, sent clock.Time) {
	_ = b[floodHeaderLen-1]
	binary.BigEndian.PutUint32(b[0:], floodMagic)
	binary.BigEndian.PutUint32(b[4:], cookie)
	binary.BigEndian.PutUint64(b[8:], seq)
	binary.BigEndian.PutUint64(b[16:], uint64(sent))
}

// readFlood reads a flood header; ok is false if b is not one of the flow
// with this cookie.
func readFlood(b []byte, cookie uint32) (seq uint64, sent clock.Time, ok bool) {
	if len(b) < floodHeaderLen || binary.BigEndian.Uint32(b) != floodMagic || binary.BigEndian.Uint32(b[4:]) != cookie {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[8:]), clock.Time(binary.BigEndian.Uint64(b[16:])), true
}
