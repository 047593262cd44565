package qdisc

import (
	"math"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

// ECN field values of the test packets' TOS byte.
const (
	tosNotECT = 0
	tosECT1   = 1
	tosECT0   = 2
)

func newTestDualPI2(t testing.TB, cfg DualPI2Config, env *Env) *DualPI2 {
	t.Helper()
	q, err := NewDualPI2(cfg, env)
	if err != nil {
		t.Fatalf("NewDualPI2(%+v): %v", cfg, err)
	}
	return q
}

// The kernel's fixed point for the defaults (dualpi2_reset_default):
// alpha 41/256 Hz scales to 41·(2^32-1)/4/1e9 = 44 (per 64 ns, of
// 2^32-1), beta 819 to 879; dumped back they read 44·4e9/(2^32-1) = 40
// and 879·4e9/(2^32-1) = 818; 1 scales to 1 and dumps as 0.93, 0.
func TestDualPI2FixedPoint(t *testing.T) {
	for _, c := range []struct{ in, scaled, dumped uint32 }{
		{41, 44, 40}, {819, 879, 818}, {1, 1, 0}, {256, 274, 255},
	} {
		if s := dpi2ScaleAlphaBeta(c.in); s != c.scaled {
			t.Errorf("scale(%d) = %d, want %d", c.in, s, c.scaled)
		}
		if d := DualPI2DumpedGain(int(c.in)); d != c.dumped {
			t.Errorf("dumped(%d) = %d, want %d", c.in, d, c.dumped)
		}
	}
	// 10000 packets × 2 × 1514 (Ethernet) and × 1500 (TUN).
	if m := DualPI2MemLimit(10000, nil); m != 30280000 {
		t.Errorf("default memlimit %d, want 30280000", m)
	}
	if m := DualPI2MemLimit(10000, &Env{Framing: FramingIP}); m != 30000000 {
		t.Errorf("TUN memlimit %d, want 30000000", m)
	}
	if m := DualPI2MemLimit(math.MaxUint32, nil); m != math.MaxUint32 {
		t.Errorf("memlimit saturates at %d, got %d", uint32(math.MaxUint32), m)
	}
}

// tc's auto-configuration from max_rtt (q_dualpi2.c): max_rtt 100ms gives
// typical 16666us, tupdate min(16666, 33333.3) = 16666us, alpha
// 0.016666/0.1²·0.1 = 0.16666 Hz → 42/256, beta 0.3/0.1 = 3 Hz → 768/256
// (0.3f and 0.1f are floats: 0.3f/0.1·256 = 768.0000305, 0.1666600...·256
// = 42.66).
func TestDualPI2FromRTT(t *testing.T) {
	target, tupdate, alpha, beta, err := dpi2FromRTT(100000, 0)
	if err != nil || target != 16666 || tupdate != 16666 || alpha != 42 || beta != 768 {
		t.Errorf("max_rtt 100ms: %d %d %d %d %v", target, tupdate, alpha, beta, err)
	}
	// typical 20ms alone: max 120ms, tupdate min(20000, 40000) = 20000,
	// alpha 0.02/0.0144·0.1 = 0.13889 Hz → 35, beta 2.5 Hz → 640.
	target, tupdate, alpha, beta, err = dpi2FromRTT(0, 20000)
	if err != nil || target != 20000 || tupdate != 20000 || alpha != 35 || beta != 640 {
		t.Errorf("typical_rtt 20ms: %d %d %d %d %v", target, tupdate, alpha, beta, err)
	}
	if _, _, _, _, err := dpi2FromRTT(10000, 20000); err == nil {
		t.Error("typical_rtt above max_rtt accepted")
	}
	// alpha = 0.1·tupdate/max² rounds below 1/256 Hz from max_rtt ≈ 4.3 s.
	if _, _, _, _, err := dpi2FromRTT(10000000, 0); err == nil {
		t.Error("max_rtt 10s accepted: alpha rounds to 0")
	}
	c := DualPI2Config{MaxRTT: 100 * time.Millisecond}.WithDefaults()
	if c.TypicalRTT != 16666*time.Microsecond || c.Target != c.TypicalRTT || c.Alpha != 42 || c.Beta != 768 {
		t.Errorf("WithDefaults(max_rtt 100ms) = %+v", c)
	}
}

// rfcPI2 is RFC 9332 Appendix A.1's PI2 controller (its dualpi2_update),
// in floating point: every Tupdate,
//
//	curq = max(cq.time(), lq.time())
//	p' = p' + alpha·(curq - target) + beta·(curq - prevq)
//	p_CL = k·p'; p_C = p'²; prevq = curq
//
// with p' kept in [0, 1] (the kernel saturates it there; the RFC's
// figure leaves the bound to the text).
type rfcPI2 struct {
	alpha, beta   float64 // Hz
	target, prevq float64 // s
	k             float64
	p             float64
}

func (m *rfcPI2) update(curq float64) {
	m.p += m.alpha*(curq-m.target) + m.beta*(curq-m.prevq)
	m.p = min(max(m.p, 0), 1)
	m.prevq = curq
}

func (m *rfcPI2) pCL() float64 { return min(m.k*m.p, 1) }
func (m *rfcPI2) pC() float64  { return m.p * m.p }

// The discipline and the RFC's controller, run side by side on the same
// queue delays, agree on p', p_CL and p_C at every update. The model's
// gains are the kernel's own after scaling (44 and 879 of 2^32-1 per
// 64 ns, i.e. 0.16008 and 3.1983 Hz, within 1/44 and 1/879 of the 41/256
// and 819/256 configured), so what is compared is the update's
// arithmetic: the kernel's per-update truncation to whole units of
// 2^-32 is all that may differ.
func TestDualPI2MatchesRFCModel(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestDualPI2(t, DualPI2Config{}, &Env{Observer: rec})
	perHz := func(scaled uint32) float64 { return float64(scaled) * 1e9 / 64 / dpi2MaxProb }
	m := &rfcPI2{alpha: perHz(q.params.alpha), beta: perHz(q.params.beta), target: 0.015, k: 2}
	if math.Abs(m.alpha-41.0/256) > 41.0/256/44 || math.Abs(m.beta-819.0/256) > 819.0/256/879 {
		t.Fatalf("effective gains %g, %g Hz are not the configured ones", m.alpha, m.beta)
	}

	// A classic (ECT(0): marked, never dropped below overload) queue:
	// arrivals every 1 ms, departures every 1.01 ms for 3 s (the queue
	// and its delay grow to about 30 ms), then every 0.5 ms (it drains). The test keeps
	// its own FIFO of arrival times to know the head's delay.
	var fifo []clock.Time
	start := clock.Time(300 * us)
	nextUpdate := start + 16*ms
	arrive, depart := start, start+700*us
	updates, peak := 0, 0.0
	end := start + 6000*ms
	for arrive < end || depart < end {
		now := min(arrive, depart)
		for nextUpdate <= now {
			curq := 0.0
			if len(fifo) > 0 {
				curq = float64(nextUpdate-fifo[0]) / 1e9
			}
			m.update(curq)
			peak = max(peak, m.p)
			nextUpdate += 16 * ms
			updates++
		}
		if arrive <= depart {
			q.Enqueue(now, coretest.UDP(pool, 1500, 2, tosECT0, int64(len(fifo))))
			fifo = append(fifo, now)
			arrive += ms
		} else {
			if p, _ := q.Dequeue(now); p != nil {
				p.Free()
				fifo = fifo[1:]
			} else if len(fifo) != 0 {
				t.Fatalf("nothing dequeued from %d packets", len(fifo))
			}
			if now < start+3000*ms {
				depart += 1010 * us
			} else {
				depart += 500 * us
			}
		}
		q.tick(now)
		if updates > 0 {
			got := float64(q.prob) / dpi2MaxProb
			tol := float64(updates) / dpi2MaxProb
			gotCL := min(got*2, 1)
			if math.Abs(got-m.p) > tol || math.Abs(gotCL-m.pCL()) > 2*tol || math.Abs(got*got-m.pC()) > 2*tol {
				t.Fatalf("t=%v after %d updates: p' %g p_CL %g p_C %g, RFC model %g %g %g", time.Duration(now), updates, got, gotCL, got*got, m.p, m.pCL(), m.pC())
			}
		}
	}
	if len(rec.drops) != 0 {
		t.Fatalf("%d drops: the model's queue is no longer the discipline's", len(rec.drops))
	}
	if updates < 300 || peak < 0.01 {
		t.Fatalf("%d updates, peak p' %g: the run did not exercise the controller", updates, peak)
	}
}

// The coupling (RFC 9332 eq. (1)): p_C = (p_CL/k)². With p' pinned, the
// C queue's marks (two rolls of p') and the L queue's (one roll of k·p')
// are counted over many packets and their ratio checked, for several p'
// and k; the tolerance is four standard deviations of the binomial
// counts.
func TestDualPI2Coupling(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	const n = 20000
	for _, c := range []struct {
		p float64
		k int
	}{{0.05, 2}, {0.1, 2}, {0.2, 2}, {0.3, 2}, {0.45, 2}, {0.1, 4}, {0.2, 3}, {0.6, 1}} {
		// A timer and a step threshold that never act within the test.
		q := newTestDualPI2(t, DualPI2Config{TUpdate: 4 * time.Second, StepThresh: 4 * time.Second, CouplingFactor: c.k}, &Env{})
		q.tick(0)
		q.prob = uint32(c.p * dpi2MaxProb)
		var marks, seen [2]int // L, C
		now := clock.Time(0)
		for i := range 2 * n {
			tos := uint8(tosECT1)
			if i%2 == 1 {
				tos = tosECT0
			}
			q.Enqueue(now, coretest.UDP(pool, 1500, 1, tos, int64(i)))
			if q.Len() < 4 { // keep more than two MTUs queued
				continue
			}
			p, _ := q.Dequeue(now)
			class := p.Seq % 2 // the TOS pattern: even L, odd C
			seen[class]++
			if packet.ECNOf(p.Bytes()) == packet.CE {
				marks[class]++
			}
			p.Free()
			now += us
		}
		fl, fc := float64(marks[0])/float64(seen[0]), float64(marks[1])/float64(seen[1])
		pCL, pC := min(float64(c.k)*c.p, 1), c.p*c.p
		sd := func(p float64) float64 { return 4 * math.Sqrt(p*(1-p)/n) }
		if math.Abs(fl-pCL) > sd(pCL)+1e-3 || math.Abs(fc-pC) > sd(pC)+1e-3 {
			t.Errorf("p'=%g k=%d: L marked %g (want p_CL %g), C marked %g (want p_C %g)", c.p, c.k, fl, pCL, fc, pC)
		}
		// p_C = (p_CL/k)², measured on both sides.
		if want := math.Pow(fl/float64(c.k), 2); math.Abs(fc-want) > sd(pC)+2*sd(pCL)*pCL/float64(c.k*c.k)+1e-3 {
			t.Errorf("p'=%g k=%d: C marked %g, (L marked/k)² = %g", c.p, c.k, fc, want)
		}
	}
}
