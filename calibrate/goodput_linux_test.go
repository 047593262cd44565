package calibrate

import (
	"math"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/traffic"
)

// A loss's hole in the in-order stream at the window's start must not
// move the goodput: it is the rate segments were delivered at, from the
// sender's count, which also survives that count wrapping.
func TestTCPGoodputCountsDeliveredSegments(t *testing.T) {
	const mss = 1448
	const perStep = 1000 // segments delivered each 100 ms: 115.84 Mbit/s
	start := uint32(math.MaxUint32 - 5000)
	var ss []traffic.TCPSample
	for k := 0; k <= 30; k++ {
		s := traffic.TCPSample{K: k, T: clock.Time(k) * clock.Time(100*time.Millisecond), Connected: k > 0}
		s.Sender.SndMSS = mss
		s.Sender.Delivered = start + uint32(k*perStep)
		// In order, the receiver stands still from 0.95 s to 1.05 s
		// (a hole), then catches up.
		read := int64(k * perStep * mss)
		if k == 10 {
			read -= perStep * mss / 2
		}
		s.ReceivedBytes = read
		ss = append(ss, s)
	}
	from, to := clock.Time(time.Second), clock.Time(3*time.Second)
	want := float64(perStep*mss*8) / 0.1
	if got := tcpGoodput(ss, from, to); math.Abs(got-want) > 1e-6*want {
		t.Errorf("goodput %.0f bit/s, want %.0f", got, want)
	}
	if got := tcpGoodput(ss[:1], 0, to); got != 0 {
		t.Errorf("goodput of one unconnected sample %.0f, want 0", got)
	}
}
