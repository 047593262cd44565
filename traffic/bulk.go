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
// or w fails (the error). What each write took is added to sent once the
// write returns, so sent only grows: a count made before the write and
// taken back after a short one (the last write, cut by the deadline) fell
// between two samples, a negative step in the sender's rate. sent thus
// lags what the transport has taken by at most the write in progress;
// a sample of it takes the larger of it and what the receiver has read
// (SentAtLeast).
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
		m, err := w.Write(buf[:n])
		sent.Add(int64(m))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// SentAtLeast is a sample's count of what a bulk sender has written: the
// sender's own count (WriteBulk's, which lags the write in progress),
// raised to the counts that cannot exceed what was written, read before
// it: what the receiver read, what the sender's kernel acknowledged. Each
// of them only grows, so the samples do too, and none of them exceeds
// what the transport has taken.
func SentAtLeast(counted int64, seen ...int64) int64 {
	for _, s := range seen {
		counted = max(counted, s)
	}
	return counted
}
