package quicflow

import (
	"sync"

	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// recorder keeps the running state of one end of a connection from the
// qlog events quic-go records (RFC 9002's recovery events and the packets
// sent and received), for what ConnectionStats does not tell: bytes in
// flight, the congestion state, real losses and retransmitted stream data.
// quic-go calls RecordEvent from the connection's goroutine; the sampler
// reads a snapshot under the mutex.
type recorder struct {
	mu sync.Mutex
	rs recoveryState
	// streamEnd is the highest stream offset sent so far: data sent again
	// below it is a retransmission.
	streamEnd int64
}

// recoveryState is what a recorder has seen so far.
type recoveryState struct {
	bytesInFlight   int
	packetsInFlight int
	congestionState string
	ecnState        string
	maxDatagram     int
	lost            uint64
	spurious        uint64
	retransmitted   uint64
	ceReceived      uint64
}

var (
	_ qlogwriter.Trace    = (*recorder)(nil)
	_ qlogwriter.Recorder = (*recorder)(nil)
)

// AddProducer returns r itself: one connection records into it.
func (r *recorder) AddProducer() qlogwriter.Recorder { return r }

// Close does nothing: the state stays readable after the connection ends.
func (r *recorder) Close() error { return nil }

// RecordEvent updates the state from the events it knows and ignores the
// rest.
func (r *recorder) RecordEvent(ev qlogwriter.Event) {
	switch e := ev.(type) {
	case qlog.MetricsUpdated:
		// quic-go fills every field of the event, not only the ones that
		// changed (sentPacketHandler.qlogMetricsUpdated starts from the
		// previous event).
		r.mu.Lock()
		r.rs.bytesInFlight = e.BytesInFlight
		r.rs.packetsInFlight = e.PacketsInFlight
		r.mu.Unlock()
	case qlog.CongestionStateUpdated:
		r.mu.Lock()
		r.rs.congestionState = string(e.State)
		r.mu.Unlock()
	case qlog.ECNStateUpdated:
		r.mu.Lock()
		r.rs.ecnState = string(e.State)
		r.mu.Unlock()
	case qlog.MTUUpdated:
		r.mu.Lock()
		r.rs.maxDatagram = e.Value
		r.mu.Unlock()
	case qlog.PacketLost:
		// A lost path MTU probe says the path's MTU is smaller, not that
		// it is congested; quic-go's controller ignores it too.
		if e.IsMTUProbePacket {
			return
		}
		r.mu.Lock()
		r.rs.lost++
		r.mu.Unlock()
	case qlog.SpuriousLoss:
		r.mu.Lock()
		r.rs.spurious++
		r.mu.Unlock()
	case qlog.PacketSent:
		r.sent(e.Frames)
	case qlog.PacketReceived:
		if e.ECN == qlog.ECNCE {
			r.mu.Lock()
			r.rs.ceReceived++
			r.mu.Unlock()
		}
	}
}

// sent counts the stream data among a sent packet's frames that lies
// below the highest offset sent before: QUIC retransmits lost data in new
// packets at its old offsets (RFC 9000 §13.3). The flow has one stream.
func (r *recorder) sent(frames []qlog.Frame) {
	for _, f := range frames {
		sf, ok := f.Frame.(*qlog.StreamFrame)
		if !ok || sf.Length == 0 {
			continue
		}
		end := sf.Offset + sf.Length
		r.mu.Lock()
		if again := min(end, r.streamEnd) - sf.Offset; again > 0 {
			r.rs.retransmitted += uint64(again)
		}
		r.streamEnd = max(r.streamEnd, end)
		r.mu.Unlock()
	}
}

// state returns what the recorder has seen so far.
func (r *recorder) state() recoveryState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rs
}
