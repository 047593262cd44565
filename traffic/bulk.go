package traffic

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
)

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
