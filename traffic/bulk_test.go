package traffic

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"
)

// shortWriter takes at most max bytes per write, and ends with a
// deadline error once it has taken cap bytes in all.
type shortWriter struct {
	max, cap, took int
	// lagged is set if a write began while sent counted less than what
	// the writer had already taken plus the write.
	sent   *atomic.Int64
	lagged bool
}

func (w *shortWriter) Write(b []byte) (int, error) {
	if w.sent.Load() < int64(w.took+len(b)) {
		w.lagged = true
	}
	if w.took >= w.cap {
		return 0, os.ErrDeadlineExceeded
	}
	n := min(len(b), w.max, w.cap-w.took)
	w.took += n
	return n, nil
}

// WriteBulk stops at the byte limit or the deadline, whichever is first,
// counts each write before it is made, and takes back what a short write
// left unwritten.
func TestWriteBulk(t *testing.T) {
	for _, c := range []struct {
		name       string
		limit      int64
		cap, short int
		want       int64
	}{
		{"limit", 1000, 1 << 20, 300, 1000},
		{"deadline", 0, 5000, 300, 5000},
		{"deadline before limit", 1 << 20, 777, 100, 777},
	} {
		var sent atomic.Int64
		w := &shortWriter{max: c.short, cap: c.cap, sent: &sent}
		if err := WriteBulk(w, make([]byte, 512), c.limit, &sent); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if sent.Load() != c.want || int64(w.took) != c.want || w.lagged {
			t.Errorf("%s: sent %d, writer took %d (lagged %v), want %d", c.name, sent.Load(), w.took, w.lagged, c.want)
		}
	}
	var sent atomic.Int64
	boom := errors.New("boom")
	if err := WriteBulk(errWriter{boom}, make([]byte, 8), 0, &sent); !errors.Is(err, boom) || sent.Load() != 0 {
		t.Errorf("failing writer: %v, sent %d", err, sent.Load())
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }
