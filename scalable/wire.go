package scalable

import (
	"encoding/binary"
	"errors"
	"time"

	"wanlab/clock"
	"wanlab/internal/wirehdr"
)

// The wire format. Every packet starts with the same 4 bytes: the magic
// "SC", the version and the packet type. Integers are big-endian.
//
//	data (DataHeaderLen = 20 bytes, then the payload):
//	  0  'S' 'C' version type=1
//	  4  sequence number             uint64 (0, 1, 2, ... per packet)
//	  12 timestamp, ns               int64  (the sender's clock)
//
//	acknowledgement (AckLen = 76 bytes):
//	  0  'S' 'C' version type=2
//	  4  highest sequence received   uint64
//	  12 its timestamp, echoed       int64
//	  20 delay, ns                   int64  (from that packet's arrival to this ACK)
//	  28 packets received            uint64 (running totals from here on)
//	  36 bytes received              uint64
//	  44 CE packets                  uint64
//	  52 CE bytes                    uint64
//	  60 ECT(1) packets              uint64
//	  68 not-ECT packets             uint64
//
// The totals are those of RFC 9768's AccECN counters (there per IP-ECN
// codepoint, in packets and bytes): a sender that misses an ACK learns
// the marks from the next one.
const (
	// DataHeaderLen is the length of a data packet's header.
	DataHeaderLen = 20
	// AckLen is the length of an acknowledgement.
	AckLen  = 76
	version = 1
)

// Type is a packet's type.
type Type uint8

// Packet types.
const (
	TypeData Type = 1
	TypeAck  Type = 2
)

// Errors of the decoders. They never allocate.
var (
	ErrShort   = errors.New("scalable: packet too short")
	ErrMagic   = errors.New("scalable: not a scalable-sender packet (bad magic)")
	ErrVersion = errors.New("scalable: unsupported version")
	ErrType    = errors.New("scalable: wrong packet type")
	ErrField   = errors.New("scalable: field out of range")
)

// DataHeader is what a data packet carries besides its payload.
type DataHeader struct {
	Seq       uint64
	Timestamp clock.Time
}

// Ack is the receiver's acknowledgement: the newest packet and the
// running totals since the receiver started.
type Ack struct {
	// Highest is the highest sequence number received, Echo its
	// timestamp, Delay how long the receiver held it before this ACK.
	Highest uint64
	Echo    clock.Time
	Delay   time.Duration
	// Packets and Bytes count the data packets received and their UDP
	// payload bytes; CEPackets and CEBytes those that arrived with CE;
	// ECT1Packets those that arrived with ECT(1); NotECTPackets those
	// that arrived with no ECN codepoint (a path that bleached it).
	Packets, Bytes     uint64
	CEPackets, CEBytes uint64
	ECT1Packets        uint64
	NotECTPackets      uint64
}

// format is the header the packets start with; wirehdr checks it as it
// does the other transports'.
var format = wirehdr.Format{Magic: [2]byte{'S', 'C'}, Version: version, ErrShort: ErrShort, ErrMagic: ErrMagic, ErrVersion: ErrVersion, ErrType: ErrType}

// PacketType returns the type of packet b, or an error if b is not a
// packet of this version.
func PacketType(b []byte) (Type, error) {
	t, err := format.Type(b)
	return Type(t), err
}

// AppendData appends h, encoded as a data packet header, to b.
func AppendData(b []byte, h DataHeader) []byte {
	var buf [DataHeaderLen]byte
	format.Put(buf[:], uint8(TypeData))
	binary.BigEndian.PutUint64(buf[4:], h.Seq)
	binary.BigEndian.PutUint64(buf[12:], uint64(h.Timestamp))
	return append(b, buf[:]...)
}

// ParseData decodes a data packet and returns its header and payload (a
// subslice of b).
func ParseData(b []byte) (DataHeader, []byte, error) {
	if err := format.Check(b, uint8(TypeData), DataHeaderLen); err != nil {
		return DataHeader{}, nil, err
	}
	h := DataHeader{
		Seq:       binary.BigEndian.Uint64(b[4:]),
		Timestamp: clock.Time(binary.BigEndian.Uint64(b[12:])),
	}
	return h, b[DataHeaderLen:], nil
}

// AppendAck appends a, encoded as an acknowledgement, to b.
func AppendAck(b []byte, a Ack) []byte {
	var buf [AckLen]byte
	format.Put(buf[:], uint8(TypeAck))
	be := binary.BigEndian
	be.PutUint64(buf[4:], a.Highest)
	be.PutUint64(buf[12:], uint64(a.Echo))
	be.PutUint64(buf[20:], uint64(a.Delay))
	be.PutUint64(buf[28:], a.Packets)
	be.PutUint64(buf[36:], a.Bytes)
	be.PutUint64(buf[44:], a.CEPackets)
	be.PutUint64(buf[52:], a.CEBytes)
	be.PutUint64(buf[60:], a.ECT1Packets)
	be.PutUint64(buf[68:], a.NotECTPackets)
	return append(b, buf[:]...)
}

// ParseAck decodes an acknowledgement. It rejects what no receiver sends:
// a negative delay, more CE, ECT(1) or not-ECT packets than packets, more
// CE bytes than bytes, or no packet at all.
func ParseAck(b []byte) (Ack, error) {
	if err := format.Check(b, uint8(TypeAck), AckLen); err != nil {
		return Ack{}, err
	}
	be := binary.BigEndian
	a := Ack{
		Highest:       be.Uint64(b[4:]),
		Echo:          clock.Time(be.Uint64(b[12:])),
		Delay:         time.Duration(be.Uint64(b[20:])),
		Packets:       be.Uint64(b[28:]),
		Bytes:         be.Uint64(b[36:]),
		CEPackets:     be.Uint64(b[44:]),
		CEBytes:       be.Uint64(b[52:]),
		ECT1Packets:   be.Uint64(b[60:]),
		NotECTPackets: be.Uint64(b[68:]),
	}
	if a.Delay < 0 || a.CEPackets > a.Packets || a.ECT1Packets > a.Packets || a.NotECTPackets > a.Packets ||
		a.CEBytes > a.Bytes || a.Packets == 0 {
		return Ack{}, ErrField
	}
	return a, nil
}
