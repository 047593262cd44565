package scalable

import (
	"fmt"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

// DefaultAckDelay is how long a receiver that acknowledges every second
// packet holds an odd one before acknowledging it anyway.
const DefaultAckDelay = time.Millisecond

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	// AckEvery is how many data packets one ACK acknowledges: 1 (every
	// packet, the default for 0) or 2 (every second packet, as TCP's
	// delayed ACKs; a lone packet is acknowledged after AckDelay).
	AckEvery int
	// AckDelay bounds how long a packet waits for its ACK when AckEvery
	// is 2. 0 means DefaultAckDelay.
	AckDelay time.Duration
}

func (c ReceiverConfig) withDefaults() (ReceiverConfig, error) {
	if c.AckEvery == 0 {
		c.AckEvery = 1
	}
	if c.AckEvery != 1 && c.AckEvery != 2 {
		return c, fmt.Errorf("scalable: an ACK every %d packets: use 1 (every packet) or 2 (every second one)", c.AckEvery)
	}
	if c.AckDelay < 0 {
		return c, fmt.Errorf("scalable: ACK delay %v is negative: use 0 for the default of %v", c.AckDelay, DefaultAckDelay)
	}
	if c.AckDelay == 0 {
		c.AckDelay = DefaultAckDelay
	}
	return c, nil
}

// ReceiverStats are the receiver's running totals.
type ReceiverStats struct {
	// Packets and Bytes count the data packets received and their bytes
	// (the whole UDP payload); PayloadBytes the application bytes in
	// them.
	Packets      uint64 `json:"packets"`
	Bytes        uint64 `json:"bytes"`
	PayloadBytes uint64 `json:"payload_bytes"`
	// CEPackets and CEBytes count the data packets that arrived CE;
	// ECT1Packets, ECT0Packets and NotECTPackets those that arrived with
	// each other codepoint.
	CEPackets     uint64 `json:"ce_packets"`
	CEBytes       uint64 `json:"ce_bytes"`
	ECT1Packets   uint64 `json:"ect1_packets"`
	ECT0Packets   uint64 `json:"ect0_packets"`
	NotECTPackets uint64 `json:"not_ect_packets"`
	// Highest is the highest sequence number received; Lost counts the
	// sequence numbers below it not received.
	Highest uint64 `json:"highest"`
	Lost    uint64 `json:"lost"`
	// Acks counts the acknowledgements sent.
	Acks uint64 `json:"acks"`
}

// Receiver is the receiving side: it counts the data packets and their
// ECN codepoints and says when to acknowledge them.
type Receiver struct {
	cfg     ReceiverConfig
	st      ReceiverStats
	any     bool
	echo    clock.Time // timestamp of the highest packet
	arrived clock.Time // when it arrived
	pending int        // packets not yet acknowledged
	ackBy   clock.Time // when the pending ones must be acknowledged
}

// NewReceiver returns a receiver that has received nothing.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Receiver{cfg: cfg, ackBy: clock.Never}, nil
}

// OnData takes a data packet that arrived at now: its header, its length
// (the UDP payload, header included) and the ECN field of its IP header.
func (r *Receiver) OnData(now clock.Time, h DataHeader, size int, ecn packet.ECN) {
	st := &r.st
	st.Packets++
	st.Bytes += uint64(size)
	st.PayloadBytes += uint64(max(0, size-DataHeaderLen))
	switch ecn & 3 {
	case packet.CE:
		st.CEPackets++
		st.CEBytes += uint64(size)
	case packet.ECT1:
		st.ECT1Packets++
	case packet.ECT0:
		st.ECT0Packets++
	default:
		st.NotECTPackets++
	}
	if !r.any || h.Seq > st.Highest {
		st.Highest, r.echo, r.arrived = h.Seq, h.Timestamp, now
		r.any = true
	}
	if st.Highest+1 > st.Packets {
		st.Lost = st.Highest + 1 - st.Packets
	} else {
		st.Lost = 0
	}
	r.pending++
	if r.pending == 1 {
		r.ackBy = now.Add(r.cfg.AckDelay)
	}
	if r.pending >= r.cfg.AckEvery {
		r.ackBy = now
	}
}

// Deadline is when Poll next has an ACK to send (clock.Never: not until
// more data arrives).
func (r *Receiver) Deadline() clock.Time { return r.ackBy }

// Poll returns the ACK to send at now, if one is due.
func (r *Receiver) Poll(now clock.Time) (Ack, bool) {
	if r.pending == 0 || now < r.ackBy {
		return Ack{}, false
	}
	r.pending = 0
	r.ackBy = clock.Never
	r.st.Acks++
	st := &r.st
	return Ack{
		Highest: st.Highest, Echo: r.echo, Delay: max(0, now.Sub(r.arrived)),
		Packets: st.Packets, Bytes: st.Bytes, CEPackets: st.CEPackets, CEBytes: st.CEBytes,
		ECT1Packets: st.ECT1Packets, NotECTPackets: st.NotECTPackets,
	}, true
}

// Stats returns the receiver's totals.
func (r *Receiver) Stats() ReceiverStats { return r.st }
