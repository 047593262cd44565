package traffic

import (
	"errors"
	"io"
	"os"
	"sync/atomic"

	"wanlab/clock"
)

// BulkOutcome is what became of a bulk flow's one stream, the part of the
// results of TCP and of other transports' bulk flows (QUIC) that says it
// the same way. They embed it.
type BulkOutcome struct {
	// Connected says whether the connection was made (its handshake
	// completed), and ConnectedAt when the client's connect or dial
	// returned.
	Connected   bool       `json:"connected"`
	ConnectedAt clock.Time `json:"connected_ns"`
	// StoppedAt is when the sender stopped writing (0 if it never
	// started).
	StoppedAt clock.Time `json:"stopped_ns"`
	// Complete says whether the receiver read the whole stream, up to the
	// sender's FIN, before the run ended; CompletedAt is when.
	Complete    bool       `json:"complete"`
	CompletedAt clock.Time `json:"completed_ns"`
	// SentBytes is what the sender's application wrote, ReceivedBytes
	// what the receiver's application read, at the end of the run.
	SentBytes     int64 `json:"sent_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
}

// WriteBulk is a bulk sender's loop, for the flows of this package and
// others: it writes buf to w again and again until w's write deadline
// passes (nil) or, if limit is positive, until sent reaches limit (nil),
// or w fails (the error). Each write is added to sent before it is made
// and what was not written is taken back after, so that sent never lags
// what the transport has taken: a receiver's count of what it read never
// exceeds it.
func WriteBulk(w io.Writer, buf []byte, limit int64, sent *atomic.Int64) error {
	for {
		n := len(buf)
		if limit > 0 {
			left := limit - sent.Load()
			if left <= 0 {
				return nil
			}
			n = int(min(left, int64(n)))
		}
		sent.Add(int64(n))
		m, err := w.Write(buf[:n])
		sent.Add(int64(m - n))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
