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
	// sent is the count writeBulk keeps; ahead is set if a write began
	// while it counted more than the writer had taken, and seen is the
	// most it counted at the start of a write.
	sent  *atomic.Int64
	ahead bool
	seen  int64
}

func (w *shortWriter) Write(b []byte) (int, error) {
	n := w.sent.Load()
	if n > int64(w.took) {
		w.ahead = true
	}
	w.seen = max(w.seen, n)
	if w.took >= w.cap {
		return 0, os.ErrDeadlineExceeded
	}
	n1 := min(len(b), w.max, w.cap-w.took)
	w.took += n1
	return n1, nil
}

// writeBulk stops at the byte limit or the deadline, whichever is first,
// and counts what each write took once it has returned: the count never
// runs ahead of the writer, so it never has to be taken back, and a
// sampler reading it never sees it fall (a fall was a negative step in
// every sent_rate series).
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
		{"deadline mid-write", 0, 700, 512, 700},
	} {
		var sent atomic.Int64
		w := &shortWriter{max: c.short, cap: c.cap, sent: &sent}
		if err := writeBulk(w, make([]byte, 512), c.limit, &sent); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if sent.Load() != c.want || int64(w.took) != c.want || w.ahead || w.seen > sent.Load() {
			t.Errorf("%s: sent %d, writer took %d (count ran ahead %v, reached %d), want %d", c.name, sent.Load(), w.took, w.ahead, w.seen, c.want)
		}
	}
	var sent atomic.Int64
	boom := errors.New("boom")
	if err := writeBulk(errWriter{boom}, make([]byte, 8), 0, &sent); !errors.Is(err, boom) || sent.Load() != 0 {
		t.Errorf("failing writer: %v, sent %d", err, sent.Load())
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }
