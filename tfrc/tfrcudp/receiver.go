package tfrcudp

import (
	"context"
	"net"
	"sync"
	"time"

	"wanlab/clock"
	"wanlab/internal/dgram"
	"wanlab/tfrc"
)

// ReceiverStats is what a Receiver reports: the protocol's figures (tfrc's
// ReceiverStats: packets received and lost, loss events, p, X_recv, and
// the application bytes delivered) and the socket's.
type ReceiverStats struct {
	tfrc.ReceiverStats
	// Elapsed is the time since the receiver was made.
	Elapsed time.Duration `json:"elapsed_ns"`
	// SendErrors counts feedback datagrams the socket refused; BadPackets
	// the datagrams received that were not TFRC data.
	SendErrors uint64 `json:"send_errors"`
	BadPackets uint64 `json:"bad_packets"`
}

// Receiver receives TFRC data on a UDP socket and sends feedback to where
// the data comes from. Stats may be read at any time from any goroutine.
type Receiver struct {
	clk *clock.Real

	mu   sync.Mutex
	core *tfrc.Receiver
	st   ReceiverStats

	loop dgram.Receiver
}

// NewReceiver returns a receiver on conn. conn belongs to the receiver from
// now on; Run closes it when it ends.
func NewReceiver(conn net.PacketConn) *Receiver {
	r := &Receiver{clk: clock.NewReal(), core: tfrc.NewReceiver()}
	// The socket's read deadline is the feedback timer.
	r.loop = dgram.Receiver{Pkg: "tfrcudp", Socket: dgram.NewSocket(conn), Clock: r.clk, Handler: (*handler)(r), FeedbackLen: tfrc.FeedbackLen}
	return r
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

// Deadline returns when TFRC's feedback timer is next due.
func (h *handler) Deadline() clock.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.core.Deadline()
}

// Handle hands a data packet to TFRC and returns the feedback due now.
func (h *handler) Handle(now clock.Time, b, _, out []byte) ([]byte, bool) {
	data := false
	h.mu.Lock()
	if b != nil {
		if d, _, err := tfrc.ParseData(b); err != nil {
			h.st.BadPackets++
		} else {
			h.core.OnData(now, d, len(b))
			data = true
		}
	}
	fb, ok := h.core.Poll(now)
	h.mu.Unlock()
	if !ok {
		return nil, data
	}
	return tfrc.AppendFeedback(out, fb), data
}

// SendFailed counts a feedback datagram the socket refused.
func (h *handler) SendFailed() {
	h.mu.Lock()
	h.st.SendErrors++
	h.mu.Unlock()
}
