package quicflow

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
	"golang.org/x/sys/unix"
)

// cmsg appends one control message to b, as quic-go builds them.
func cmsg(b []byte, level, typ int, data []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(len(data)))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[start]))
	h.Level, h.Type = int32(level), int32(typ)
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[start+unix.CmsgLen(0):], data)
	return b
}

// setDSCP writes the DSCP into the TOS byte of an IPv4 ECN message and
// into the traffic class of an IPv6 one, keeping their ECN bits, and
// leaves every other control message alone.
func TestSetDSCP(t *testing.T) {
	seg := binary.NativeEndian.AppendUint16(nil, 1400)
	tclass := binary.NativeEndian.AppendUint32(nil, 0x02)
	oob := cmsg(nil, unix.SOL_UDP, unix.UDP_SEGMENT, seg)
	oob = cmsg(oob, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x02})
	oob = cmsg(oob, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tclass)
	want := cmsg(nil, unix.SOL_UDP, unix.UDP_SEGMENT, seg)
	want = cmsg(want, unix.IPPROTO_IP, unix.IP_TOS, []byte{0xba})
	want = cmsg(want, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, binary.NativeEndian.AppendUint32(nil, 0xba))
	setDSCP(oob, 0xb8)
	if string(oob) != string(want) {
		t.Errorf("control messages\n%x, want\n%x", oob, want)
	}
	// A truncated message ends the walk without a change or a panic.
	short := cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x01})
	setDSCP(short[:unix.SizeofCmsghdr-1], 0xb8)
	setDSCP(nil, 0xb8)
}

// The recorder keeps quic-go's latest recovery metrics and counts real
// losses, spurious ones, CE marks and stream bytes sent again below the
// highest offset sent before.
func TestRecorder(t *testing.T) {
	var r recorder
	stream := func(off, n int64) qlog.PacketSent {
		return qlog.PacketSent{Frames: []qlog.Frame{{Frame: &qlog.AckFrame{}}, {Frame: &qlog.StreamFrame{Offset: off, Length: n}}}}
	}
	for _, ev := range []qlogwriter.Event{
		qlog.CongestionStateUpdated{State: qlog.CongestionStateSlowStart},
		stream(0, 1000),
		stream(1000, 1000),
		qlog.MetricsUpdated{CongestionWindow: 40000, BytesInFlight: 2100, PacketsInFlight: 2},
		qlog.PacketLost{},
		qlog.PacketLost{IsMTUProbePacket: true},
		qlog.CongestionStateUpdated{State: qlog.CongestionStateRecovery},
		// Half of the lost packet's data again, with new data in the
		// same frame; then a frame with no data (a FIN alone).
		stream(1500, 1000),
		stream(2500, 0),
		qlog.SpuriousLoss{},
		qlog.PacketReceived{ECN: qlog.ECNCE},
		qlog.PacketReceived{ECN: qlog.ECT0},
		qlog.ECNStateUpdated{State: qlog.ECNStateCapable},
		qlog.MTUUpdated{Value: 1452},
		qlog.MetricsUpdated{CongestionWindow: 28000, BytesInFlight: 1400, PacketsInFlight: 1},
	} {
		r.RecordEvent(ev)
	}
	want := recoveryState{bytesInFlight: 1400, packetsInFlight: 1, congestionState: "recovery", ecnState: "capable",
		maxDatagram: 1452, lost: 1, spurious: 1, retransmitted: 500, ceReceived: 1}
	if got := r.state(); got != want {
		t.Errorf("state %+v\nwant  %+v", got, want)
	}
}
