package tfrc

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"wanlab/clock"
	"wanlab/internal/wirehdr"
)

// The wire format. Every packet starts with the same 4 bytes: the magic
// "TF", the version and the packet type. Integers are big-endian.
//
//	data (DataHeaderLen = 24 bytes, then the payload):
//	  0  'T' 'F' version type=1
//	  4  sequence number            uint64
//	  12 timestamp, ns              int64   (the sender's clock)
//	  20 sender's RTT estimate, µs  uint32  (0: none yet)
//
//	feedback (FeedbackLen = 44 bytes):
//	  0  'T' 'F' version type=2
//	  4  sequence number echoed     uint64  (of the last data packet received)
//	  12 timestamp echoed, ns       int64   (t_recvdata of RFC 5348 §3.2.2)
//	  20 t_delay, ns                int64   (from its arrival to this feedback)
//	  28 X_recv, bytes/s            float64 (IEEE 754 bits)
//	  36 loss event rate p          float64 (IEEE 754 bits)
//
// This carries what RFC 5348 §3.2 asks of each packet. CCID 3 (RFC 4342
// §8) puts the same information in DCCP options, with a window counter in
// place of the RTT estimate.
const (
	// DataHeaderLen is the length of a data packet's header.
	DataHeaderLen = 24
	// FeedbackLen is the length of a feedback packet.
	FeedbackLen = 44
	version     = 1
)

// Type is a packet's type.
type Type uint8

// Packet types.
const (
	TypeData     Type = 1
	TypeFeedback Type = 2
)

// Errors of the decoders. They never allocate, so a receive loop can reject
// stray datagrams on its hot path.
var (
	ErrShort   = errors.New("tfrc: packet too short")
	ErrMagic   = errors.New("tfrc: not a TFRC packet (bad magic)")
	ErrVersion = errors.New("tfrc: unsupported version")
	ErrType    = errors.New("tfrc: wrong packet type")
	ErrField   = errors.New("tfrc: field out of range")
)

// DataHeader is what a data packet carries besides its payload (RFC 5348
// §3.2.1): a sequence number that grows by one per packet, the time it was
// sent on the sender's clock, and the sender's current RTT estimate.
type DataHeader struct {
	Seq       uint64
	Timestamp clock.Time
	// RTT is the sender's estimate, carried in whole microseconds; zero
	// until the sender has one.
	RTT time.Duration
}

// Feedback is what the receiver reports (RFC 5348 §3.2.2).
type Feedback struct {
	// Seq and Echo identify the last data packet received: its sequence
	// number and its timestamp (t_recvdata).
	Seq  uint64
	Echo clock.Time
	// Delay is t_delay: how long the receiver held that packet before
	// sending this feedback.
	Delay time.Duration
	// XRecv is the rate at which the receiver got data since its previous
	// feedback, in bytes per second.
	XRecv float64
	// P is the loss event rate, 0 until the first loss.
	P float64
}

// format is the header the packets start with; wirehdr checks it as it
// does the other transports'.
var format = wirehdr.Format{Magic: [2]byte{'T', 'F'}, Version: version, ErrShort: ErrShort, ErrMagic: ErrMagic, ErrVersion: ErrVersion, ErrType: ErrType}

// PacketType returns the type of packet b, or an error if b is not a TFRC
// packet of this version.
func PacketType(b []byte) (Type, error) {
	t, err := format.Type(b)
	return Type(t), err
}

// AppendData appends h, encoded as a data packet header, to b. The RTT is
// rounded down to whole microseconds and saturates at about 71 minutes.
func AppendData(b []byte, h DataHeader) []byte {
	var buf [DataHeaderLen]byte
	format.Put(buf[:], uint8(TypeData))
	binary.BigEndian.PutUint64(buf[4:], h.Seq)
	binary.BigEndian.PutUint64(buf[12:], uint64(h.Timestamp))
	us := h.RTT / time.Microsecond
	if us < 0 {
		us = 0
	}
	if us > math.MaxUint32 {
		us = math.MaxUint32
	}
	binary.BigEndian.PutUint32(buf[20:], uint32(us))
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
		RTT:       time.Duration(binary.BigEndian.Uint32(b[20:])) * time.Microsecond,
	}
	return h, b[DataHeaderLen:], nil
}

// AppendFeedback appends f, encoded as a feedback packet, to b.
func AppendFeedback(b []byte, f Feedback) []byte {
	var buf [FeedbackLen]byte
	format.Put(buf[:], uint8(TypeFeedback))
	binary.BigEndian.PutUint64(buf[4:], f.Seq)
	binary.BigEndian.PutUint64(buf[12:], uint64(f.Echo))
	binary.BigEndian.PutUint64(buf[20:], uint64(f.Delay))
	binary.BigEndian.PutUint64(buf[28:], math.Float64bits(f.XRecv))
	binary.BigEndian.PutUint64(buf[36:], math.Float64bits(f.P))
	return append(b, buf[:]...)
}

// ParseFeedback decodes a feedback packet. It rejects values no receiver
// sends: a negative t_delay, an X_recv that is negative or not finite, and
// a p outside [0, 1]; bytes after the packet are ignored.
func ParseFeedback(b []byte) (Feedback, error) {
	if err := format.Check(b, uint8(TypeFeedback), FeedbackLen); err != nil {
		return Feedback{}, err
	}
	f := Feedback{
		Seq:   binary.BigEndian.Uint64(b[4:]),
		Echo:  clock.Time(binary.BigEndian.Uint64(b[12:])),
		Delay: time.Duration(binary.BigEndian.Uint64(b[20:])),
		XRecv: math.Float64frombits(binary.BigEndian.Uint64(b[28:])),
		P:     math.Float64frombits(binary.BigEndian.Uint64(b[36:])),
	}
	if f.Delay < 0 || !(f.XRecv >= 0) || math.IsInf(f.XRecv, 0) || !(f.P >= 0 && f.P <= 1) {
		return Feedback{}, ErrField
	}
	return f, nil
}
