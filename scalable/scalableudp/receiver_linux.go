package scalableudp

import (
	"context"
	"net"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/internal/dgram"
	"wanlab/packet"
	"wanlab/scalable"
	"wanlab/traffic"
)

// ReceiverStats is what a Receiver reports: the protocol's totals
// (scalable's ReceiverStats: packets and bytes received, per ECN
// codepoint, lost, ACKs) and the socket's.
type ReceiverStats struct {
	scalable.ReceiverStats
	// Elapsed is the time since the receiver was made.
	Elapsed time.Duration `json:"elapsed_ns"`
	// SendErrors counts ACKs the socket refused; BadPackets the
	// datagrams received that were not data; NoTOS the data packets
	// whose TOS byte the kernel did not report (counted as Not-ECT).
	SendErrors uint64 `json:"send_errors"`
	BadPackets uint64 `json:"bad_packets"`
	NoTOS      uint64 `json:"no_tos"`
}

// Receiver receives data on a UDP socket, counts each packet's ECN
// codepoint and acknowledges to where the data comes from. Stats may be
// read at any time from any goroutine.
type Receiver struct {
	clk *clock.Real

	mu   sync.Mutex
	core *scalable.Receiver
	st   ReceiverStats

	loop dgram.Receiver
}

// NewReceiver returns a receiver on conn, acknowledging every ackEvery
// packets (0 or 1: every packet; 2: every second one), with the TOS byte
// tos on its ACKs (its ECN bits are cleared: the ACKs are Not-ECT). conn
// belongs to the receiver from now on; Run closes it when it ends.
func NewReceiver(conn net.PacketConn, ackEvery, tos int) (*Receiver, error) {
	u, err := udpConn(conn, "receiver")
	if err != nil {
		return nil, err
	}
	core, err := scalable.NewReceiver(scalable.ReceiverConfig{AckEvery: ackEvery})
	if err != nil {
		return nil, err
	}
	if err := recvTOS(u); err != nil {
		return nil, err
	}
	if err := setTOS(u, tos&^3); err != nil {
		return nil, err
	}
	r := &Receiver{clk: clock.NewReal(), core: core}
	// The socket's read deadline is the delayed-ACK timer; each
	// datagram's TOS byte comes in a control message.
	r.loop = dgram.Receiver{Pkg: "scalableudp", Socket: dgram.NewSocket(u), Clock: r.clk, Handler: (*handler)(r), OOB: 64, FeedbackLen: scalable.AckLen}
	return r, nil
}

// Stats returns the receiver's figures now.
func (r *Receiver) Stats() ReceiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.ReceiverStats = r.core.Stats()
	st.Elapsed = time.Duration(r.clk.Now())
	return st
}

// Run receives until ctx ends or the socket fails, then closes the socket
// and returns, with every goroutine it started ended. It returns nil when
// ctx ended it. Run may be called once.
func (r *Receiver) Run(ctx context.Context) error { return r.loop.Run(ctx) }

// handler is the Receiver as dgram's receive loop drives it.
type handler Receiver

// Deadline returns when the delayed-ACK timer is next due.
func (h *handler) Deadline() clock.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.core.Deadline()
}

// Handle counts a data packet with the ECN codepoint it arrived with and
// returns the ACK due now.
func (h *handler) Handle(now clock.Time, b, oob, out []byte) ([]byte, bool) {
	data := false
	h.mu.Lock()
	if b != nil {
		if d, _, err := scalable.ParseData(b); err != nil {
			h.st.BadPackets++
		} else {
			tos := traffic.ReceivedTOS(oob)
			if tos < 0 {
				h.st.NoTOS++
				tos = 0
			}
			h.core.OnData(now, d, len(b), packet.ECN(tos&3))
			data = true
		}
	}
	a, ok := h.core.Poll(now)
	h.mu.Unlock()
	if !ok {
		return nil, data
	}
	return scalable.AppendAck(out, a), data
}

// SendFailed counts an ACK the socket refused.
func (h *handler) SendFailed() {
	h.mu.Lock()
	h.st.SendErrors++
	h.mu.Unlock()
}
