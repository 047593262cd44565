package traffic

import (
	"math"
	"testing"
	"time"

	"wanlab/clock"
)

// RFC 4737's own example (section 3.3): packets 1 2 3 5 4 6 ... with
// NextExp; here numbered from 0 and with a duplicate and a loss added.
func TestSeqLogReorderDuplicateLoss(t *testing.T) {
	var l seqLog
	arrivals := []struct {
		seq  uint64
		want arrival
	}{
		{0, inOrder}, {1, inOrder}, {2, inOrder},
		{4, inOrder},   // 3 is late: NextExp becomes 5
		{3, reordered}, // below NextExp 5
		{5, inOrder},
		{5, duplicate}, // neither new nor reordered
		{3, duplicate},
		{9, inOrder}, // 6, 7, 8 not (yet) here
		{7, reordered},
	}
	for _, a := range arrivals {
		if got := l.add(a.seq); got != a.want {
			t.Errorf("add(%d) = %d, want %d", a.seq, got, a.want)
		}
	}
	if l.unique != 8 || l.reordered != 2 || l.dups != 2 || l.next != 10 {
		t.Errorf("unique %d reordered %d dups %d next %d; want 8 2 2 10", l.unique, l.reordered, l.dups, l.next)
	}
	// Missing: 6 and 8 of 0..9; 6 of [5,7); nothing of [0,6); [10,12)
	// never arrived at all (beyond what the log has seen).
	for _, c := range []struct{ from, to, want uint64 }{
		{0, 10, 2}, {5, 7, 1}, {0, 6, 0}, {6, 9, 2}, {10, 12, 2}, {8, 8, 0}, {9, 3, 0},
	} {
		if got := l.missing(c.from, c.to); got != c.want {
			t.Errorf("missing(%d, %d) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
	if !l.has(7) || l.has(8) || l.has(1000) {
		t.Error("has: wrong")
	}
}

// missing across many words, against a plain count.
func TestSeqLogMissingWords(t *testing.T) {
	var l seqLog
	for s := uint64(0); s < 1000; s++ {
		if s%7 != 3 && s != 500 {
			l.add(s)
		}
	}
	for _, r := range [][2]uint64{{0, 1000}, {63, 65}, {64, 128}, {100, 700}, {499, 501}, {990, 1100}} {
		var want uint64
		for s := r[0]; s < r[1]; s++ {
			if !l.has(s) {
				want++
			}
		}
		if got := l.missing(r[0], r[1]); got != want {
			t.Errorf("missing(%d, %d) = %d, want %d", r[0], r[1], got, want)
		}
	}
}

// The receiver's account of a hand-made arrival sequence: transit times
// (ms) 10, 12, 11 (a reordered packet, marked CE), a duplicate, then 15.
func TestFloodRxArithmetic(t *testing.T) {
	ms := func(v float64) clock.Time { return clock.Time(v * 1e6) }
	var r floodRx
	r.add(0, 100, ms(0), ms(10), false)
	r.add(2, 100, ms(2), ms(14), false)
	r.add(1, 100, ms(1), ms(12), true)
	r.add(1, 100, ms(1), ms(13), true) // duplicate: not counted again
	r.add(3, 100, ms(3), ms(18), false)
	if r.log.unique != 4 || r.log.reordered != 1 || r.log.dups != 1 || r.bytes != 400 || r.ce != 1 {
		t.Errorf("unique %d reordered %d dups %d bytes %d ce %d", r.log.unique, r.log.reordered, r.log.dups, r.bytes, r.ce)
	}
	// Transits in arrival order 10, 12, 11, 15 ms: D = 2, 1, 4, so
	// J = 0.41845703125 ms (stats' hand-computed example).
	if got := r.jitter.Value(); math.Abs(got-0.41845703125e6) > 1e-6 {
		t.Errorf("jitter %v ns, want 418457.03125", got)
	}
	if r.total.min != 10*time.Millisecond || r.total.max != 15*time.Millisecond || r.total.mean() != 12*time.Millisecond {
		t.Errorf("owd min %v mean %v max %v, want 10ms 12ms 15ms", r.total.min, r.total.mean(), r.total.max)
	}
}

func BenchmarkSeqLogAdd(b *testing.B) {
	b.ReportAllocs()
	var l seqLog
	var s uint64
	for b.Loop() {
		// Mostly in order, every 16th swapped with its neighbour.
		x := s
		if s%16 == 0 {
			x = s + 1
		} else if s%16 == 1 {
			x = s - 1
		}
		l.add(x)
		s++
	}
}

func BenchmarkFloodRxAdd(b *testing.B) {
	b.ReportAllocs()
	var r floodRx
	var s uint64
	for b.Loop() {
		r.add(s, 1470, clock.Time(s*1000), clock.Time(s*1000+5e6), false)
		s++
	}
}
