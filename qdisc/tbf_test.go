package qdisc

import (
	"math/bits"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/coretest"
	"wanlab/packet"
)

const (
	oneMbit = Rate(125000) // 1 Mbit/s in bytes per second
	us      = clock.Time(time.Microsecond)
)

// The kernel figures of tbf's tests (departure times, max_size) were worked
// out for a TUN device, where qdisc_pkt_len is the IP length alone: those
// tests set FramingIP. TestTBFEthernet checks the Ethernet figures.

func newTestTBF(t *testing.T, cfg TBFConfig, env *Env) *TBF {
	t.Helper()
	q, err := NewTBF(cfg, env, nil)
	if err != nil {
		t.Fatalf("NewTBF(%+v): %v", cfg, err)
	}
	return q
}

func departureTimes(deps []tqDeparture) []clock.Time {
	ts := make([]clock.Time, len(deps))
	for i, d := range deps {
		ts[i] = d.t
	}
	return ts
}

func equalTimes(a, b []clock.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sch_tbf.c's arithmetic: a full 4096-byte bucket (32.768 ms of credit at 1 Mbit/s)
// lets two 1500-byte packets (12 ms each) go at once; the third waits for
// the missing 3.232 ms, and then one leaves every 12 ms.
func TestTBFBurstThenRate(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 54096}, &Env{Observer: rec, Framing: FramingIP})
	if q.Buffer() != 32768*time.Microsecond || q.MaxSize() != 4096 {
		t.Errorf("buffer %v max_size %d, want 32.768ms and 4096", q.Buffer(), q.MaxSize())
	}
	for i := range 6 {
		if v := q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i))); v != Queued {
			t.Fatalf("packet %d: %v", i, v)
		}
	}
	got := departureTimes(tqDrain(t, q, 0, clock.Never-1))
	want := []clock.Time{0, 0, 3232 * us, 15232 * us, 27232 * us, 39232 * us}
	if !equalTimes(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
	if s := q.Stats(); s.Packets != 6 || s.Bytes != 9000 || s.Overlimits != 4 || s.Drops != 0 {
		t.Errorf("Stats %+v, want 6 packets, 4 overlimits", s)
	}
	coretest.CheckLive(t, pool, 0)
}

// On Ethernet (the default framing) every packet costs its IP length plus
// the 14-byte header: at 10 Mbit/s a 1500-byte IP packet takes 1514 B =
// 1.2112 ms of credit, a bucket of 1514 bytes holds exactly one, and an IP
// packet of burst-13 bytes no longer fits.
func TestTBFEthernet(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestTBF(t, TBFConfig{Rate: 10 * oneMbit, Burst: 1514, Limit: 100000}, &Env{Observer: rec})
	for i := range 3 {
		if v := q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i))); v != Queued {
			t.Fatalf("packet %d: %v", i, v)
		}
	}
	if v := q.Enqueue(0, coretest.UDP(pool, 1501, 1000, 0, 3)); v != Dropped || rec.count(ReasonOversize) != 1 {
		t.Errorf("1501-byte IP packet (1515 framed) into burst 1514: %v, want an oversize drop", v)
	}
	if q.Backlog() != 3*1514 {
		t.Errorf("Backlog %d, want 3*1514", q.Backlog())
	}
	got := departureTimes(tqDrain(t, q, 0, clock.Never-1))
	if want := []clock.Time{0, 1211200, 2422400}; !equalTimes(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
	if s := q.Stats(); s.Bytes != 3*1514 {
		t.Errorf("Sent %d bytes, want 3*1514 (tc -s counts framed bytes)", s.Bytes)
	}
	coretest.CheckLive(t, pool, 0)
}

// Polling at arbitrary times gives the same departures, rounded up to the
// next poll: a throttled Dequeue does not move t_c, so credit keeps
// accruing.
func TestTBFPollingDoesNotLoseCredit(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 54096}, &Env{Framing: FramingIP})
	for i := range 6 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	exact := []clock.Time{0, 0, 3232 * us, 15232 * us, 27232 * us, 39232 * us}
	const step = 700 * us
	var got []clock.Time
	for now := clock.Time(0); len(got) < 6 && now < 100*ms; now += step {
		for {
			p, _ := q.Dequeue(now)
			if p == nil {
				break
			}
			got = append(got, now)
			p.Free()
		}
	}
	for i := range exact {
		want := (exact[i] + step - 1) / step * step
		if i >= len(got) || got[i] != want {
			t.Fatalf("departures %v, want the exact times %v rounded up to %v", got, exact, step)
		}
	}
	if q.Stats().Overlimits < 20 {
		t.Errorf("Overlimits %d: every throttled poll should count", q.Stats().Overlimits)
	}
	coretest.CheckLive(t, pool, 0)
}

// tbf_enqueue: a packet longer than the burst can never be sent.
func TestTBFOversizeDrop(t *testing.T) {
	pool := packet.NewPool(8192, packet.DefaultHeadroom)
	rec := &recorder{}
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 54096}, &Env{Observer: rec, Framing: FramingIP})
	if v := q.Enqueue(0, coretest.UDP(pool, 5000, 1000, 0, 1)); v != Dropped {
		t.Errorf("5000 B packet: %v, want Dropped", v)
	}
	if v := q.Enqueue(0, coretest.UDP(pool, 4096, 1000, 0, 2)); v != Queued {
		t.Errorf("4096 B packet: %v, want Queued", v)
	}
	if len(rec.drops) != 1 || rec.drops[0].why != ReasonOversize || rec.drops[0].kind != "tbf" {
		t.Errorf("drops %+v, want one oversize drop by tbf", rec.drops)
	}
	s := q.Stats()
	if s.Drops != 1 || s.DropsByReason[ReasonOversize] != 1 || s.Qlen != 1 || s.Backlog != 4096 {
		t.Errorf("Stats %+v", s)
	}
	// A packet of exactly the burst costs the whole bucket: it leaves at once.
	if deps := tqDrain(t, q, 0, 0); len(deps) != 1 {
		t.Errorf("departures %+v, want the 4096 B packet at 0", deps)
	}
	coretest.CheckLive(t, pool, 0)
}

// With a peakrate (tbf_dequeue's second bucket): the 6 ms peak bucket paces packets 6 ms apart until the
// 81.92 ms rate bucket runs dry (12 packets, 0..66 ms); the 13th waits for
// 2.08 ms of rate credit (74.08 ms), and then the rate rules: one per 12 ms.
func TestTBFPeakRate(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 10240, PeakRate: 2 * oneMbit, MTU: 1500, Limit: 100000}, &Env{Framing: FramingIP})
	if q.MaxSize() != 1500 {
		t.Errorf("max_size %d, want min(burst, mtu) = 1500", q.MaxSize())
	}
	for i := range 16 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	var want []clock.Time
	for i := range 12 {
		want = append(want, clock.Time(i)*6*ms)
	}
	for i := range 4 {
		want = append(want, 74080*us+clock.Time(i)*12*ms)
	}
	if got := departureTimes(tqDrain(t, q, 0, clock.Never-1)); !equalTimes(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
	coretest.CheckLive(t, pool, 0)
}

// q_tbf.c's conversion of latency into a limit.
func TestTBFLatencyLimit(t *testing.T) {
	if got := TBFLatencyLimit(oneMbit, 4096, 0, 0, 400*time.Millisecond); got != 54096 {
		t.Errorf("rate 1mbit burst 4096 latency 400ms: limit %d, want 54096", got)
	}
	// With a peakrate the smaller of the two: 2mbit*50ms + 1500 = 14000
	// beats 1mbit*50ms + 10240 = 16490.
	if got := TBFLatencyLimit(oneMbit, 10240, 2*oneMbit, 1500, 50*time.Millisecond); got != 14000 {
		t.Errorf("peakrate case: limit %d, want 14000", got)
	}
	// Sub-microsecond parts are ignored, as tc's get_time counts in us.
	if got := TBFLatencyLimit(oneMbit, 0, 0, 0, 1500*time.Nanosecond); got != 0 {
		t.Errorf("1.5us at 1mbit: limit %d, want 0 (0.125 B truncated)", got)
	}
}

func TestTBFLengthToTime(t *testing.T) {
	cases := []struct {
		name string
		r    rateCfg
		n    int
		want int64
	}{
		{"plain", newRateCfg(oneMbit, 0, 0, LinkEthernet), 1500, 1500 * 8000},
		{"overhead", newRateCfg(oneMbit, 24, 0, LinkEthernet), 1500, 1524 * 8000},
		{"mpu", newRateCfg(oneMbit, 0, 64, LinkEthernet), 40, 64 * 8000},
		{"mpu after overhead", newRateCfg(oneMbit, 30, 64, LinkEthernet), 40, 70 * 8000},
		// 1500 B need 32 cells of 48 B, sent as 32*53 = 1696 B.
		{"atm", newRateCfg(oneMbit, 0, 0, LinkATM), 1500, 1696 * 8000},
		{"atm exact cells", newRateCfg(oneMbit, 0, 0, LinkATM), 96, 106 * 8000},
		// 3 Mbit/s = 375000 B/s: 1500 B take exactly 4 ms.
		{"non-divisor rate", newRateCfg(3*oneMbit, 0, 0, LinkEthernet), 1500, 4000000},
		{"non-divisor rate floor", newRateCfg(3*oneMbit, 0, 0, LinkEthernet), 1, 2666},
		{"10gbit", newRateCfg(10000*oneMbit, 0, 0, LinkEthernet), 1500, 1200},
	}
	for _, c := range cases {
		if got := c.r.l2t(c.n); got != c.want {
			t.Errorf("%s: l2t(%d) = %d, want %d", c.name, c.n, got, c.want)
		}
	}
	// Overhead also sizes the bucket: burst 4096 with overhead 100 holds
	// 4196 B worth of credit.
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 10000, Overhead: 100}, &Env{})
	if q.Buffer() != 4196*8000 {
		t.Errorf("buffer %v, want %v", q.Buffer(), time.Duration(4196*8000))
	}
}

// kernelL2T is psched_l2t_ns with psched_ratecfg_precompute's reciprocal,
// to compare wanlab's exact division with the kernel's rounding.
func kernelL2T(rate uint64, n uint64) uint64 {
	factor, shift := uint64(1e9), uint(0)
	var mult uint64
	for {
		mult = uint64(uint32(factor / rate))
		if mult&(1<<31) != 0 || factor&(1<<63) != 0 {
			break
		}
		factor <<= 1
		shift++
	}
	return n * mult >> shift
}

// The kernel's mult/shift rounding changes none of the figures in these tests (1
// and 2 Mbit/s divide 1e9 B/s), and elsewhere costs at most a few ns.
func TestTBFKernelRounding(t *testing.T) {
	for _, c := range []struct {
		rate    Rate
		maxDiff int64
	}{{oneMbit, 0}, {2 * oneMbit, 0}, {8 * oneMbit, 0}, {3 * oneMbit, 1}, {7 * oneMbit, 1}, {Rate(7000), 3}, {20000 * oneMbit, 1}} {
		r := newRateCfg(c.rate, 0, 0, LinkEthernet)
		worst := int64(0)
		for n := 0; n <= 70000; n++ {
			hi, lo := bits.Mul64(uint64(n), 1e9)
			exact, _ := bits.Div64(hi, lo, uint64(c.rate))
			if r.l2t(n) != int64(exact) {
				t.Fatalf("rate %d: l2t(%d) = %d, want exact %d", c.rate, n, r.l2t(n), exact)
			}
			worst = max(worst, int64(exact-kernelL2T(uint64(c.rate), uint64(n))))
		}
		if worst != c.maxDiff {
			t.Errorf("rate %d B/s: kernel rounds down by up to %d ns, expected %d", c.rate, worst, c.maxDiff)
		}
	}
}

// A big head blocks a small packet behind it: tbf never reorders.
func TestTBFHeadOfLine(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 2000, Limit: 10000}, &Env{Framing: FramingIP})
	q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 0))
	q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 1))
	q.Enqueue(0, coretest.UDP(pool, 100, 1000, 0, 2))
	deps := tqDrain(t, q, 0, clock.Never-1)
	// Bucket 16 ms: the first at 0 leaves 4 ms, the second needs 8 ms more,
	// and the small one (0.8 ms) must wait behind it.
	want := []tqDeparture{{0, 0, 1500}, {8 * ms, 1, 1500}, {8800 * us, 2, 100}}
	if len(deps) != 3 || deps[0] != want[0] || deps[1] != want[1] || deps[2] != want[2] {
		t.Errorf("departures %+v, want %+v", deps, want)
	}
	coretest.CheckLive(t, pool, 0)
}

// Peek charges and takes the packet as qdisc_peek_dequeued; a throttled
// Peek returns the same deadline as Dequeue.
func TestTBFPeek(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q := newTestTBF(t, TBFConfig{Rate: oneMbit, Burst: 1500, Limit: 10000}, &Env{Framing: FramingIP})
	q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 0))
	q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, 1))
	p, _ := q.Peek(0)
	if p == nil || p.Seq != 0 || q.Len() != 2 || q.Backlog() != 3000 {
		t.Fatalf("Peek(0) = %v, Len %d Backlog %d", p, q.Len(), q.Backlog())
	}
	if p2, _ := q.Dequeue(0); p2 != p {
		t.Fatalf("Dequeue after Peek returned %v, want the peeked packet", p2)
	}
	p.Free()
	if p, next := q.Peek(1 * ms); p != nil || next != 12*ms {
		t.Errorf("Peek(1ms) = %v, %v; want nil, 12ms", p, next)
	}
	if p, next := q.Dequeue(2 * ms); p != nil || next != 12*ms {
		t.Errorf("Dequeue(2ms) = %v, %v; want nil, 12ms", p, next)
	}
	if p, _ := q.Dequeue(12 * ms); p == nil || p.Seq != 1 {
		t.Errorf("Dequeue(12ms) = %v, want packet 1", p)
	} else {
		p.Free()
	}
	if p, next := q.Dequeue(20 * ms); p != nil || next != clock.Never {
		t.Errorf("empty Dequeue = %v, %v; want nil, Never", p, next)
	}
	coretest.CheckLive(t, pool, 0)
}

func TestTBFValidation(t *testing.T) {
	ok := TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 54096}
	cases := []struct {
		name string
		edit func(*TBFConfig)
		want string
	}{
		{"no rate", func(c *TBFConfig) { c.Rate = 0 }, "rate"},
		{"no burst", func(c *TBFConfig) { c.Burst = 0 }, "burst"},
		{"negative burst", func(c *TBFConfig) { c.Burst = -1 }, "burst"},
		{"no limit", func(c *TBFConfig) { c.Limit = 0 }, "limit"},
		{"peakrate without mtu", func(c *TBFConfig) { c.PeakRate = 2 * oneMbit }, "mtu"},
		{"peakrate equal to rate", func(c *TBFConfig) { c.PeakRate, c.MTU = oneMbit, 1500 }, "exceed"},
		{"peakrate below rate", func(c *TBFConfig) { c.PeakRate, c.MTU = oneMbit/2, 1500 }, "exceed"},
		{"negative mpu", func(c *TBFConfig) { c.MPU = -1 }, "mpu"},
		{"overhead beyond u16", func(c *TBFConfig) { c.Overhead = 70000 }, "overhead"},
		{"link layer", func(c *TBFConfig) { c.Link = 7 }, "link"},
	}
	for _, c := range cases {
		cfg := ok
		c.edit(&cfg)
		_, err := NewTBF(cfg, &Env{}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	// A given child makes the limit unnecessary; mtu without peakrate is
	// ignored, as by the kernel.
	child, _ := NewFifo(FifoConfig{}, &Env{})
	q, err := NewTBF(TBFConfig{Rate: oneMbit, Burst: 4096, MTU: 100}, &Env{}, child)
	if err != nil || q.Child() != child || q.MaxSize() != 4096 {
		t.Errorf("tbf with child: %v, %v", q, err)
	}
	// A burst below the MTU is accepted but warned about.
	if _, err := NewTBF(TBFConfig{Rate: oneMbit, Burst: 1000, Limit: 5000}, &Env{}, nil); err != nil {
		t.Errorf("burst 1000: %v, want accepted", err)
	}
}

func TestTBFWarnings(t *testing.T) {
	if w := Warnings(TBFConfig{Rate: oneMbit, Burst: 4096, Limit: 1}, &Env{}); len(w) != 0 {
		t.Errorf("burst 4096: warnings %q", w)
	}
	w := Warnings(TBFConfig{Rate: oneMbit, Burst: 1000, Limit: 1}, &Env{Framing: FramingIP})
	if len(w) != 1 || !strings.Contains(w[0], "burst 1000") || !strings.Contains(w[0], "1500") {
		t.Errorf("burst 1000 on a TUN device: warnings %q", w)
	}
	// On Ethernet a full-size packet is 1514 bytes: a burst of 1500 drops
	// it.
	w = Warnings(TBFConfig{Rate: oneMbit, Burst: 1500, Limit: 1}, nil)
	if len(w) != 1 || !strings.Contains(w[0], "burst 1500") || !strings.Contains(w[0], "1514") {
		t.Errorf("burst 1500 on Ethernet: warnings %q", w)
	}
	w = Warnings(TBFConfig{Rate: oneMbit, Burst: 4096, PeakRate: 2 * oneMbit, MTU: 1000, Limit: 1}, &Env{})
	if len(w) != 1 || !strings.Contains(w[0], "mtu 1000") {
		t.Errorf("peakrate mtu 1000: warnings %q", w)
	}
	if w := Warnings(CoDelConfig{}, nil); w != nil {
		t.Errorf("codel: warnings %q", w)
	}
}

// tbf with another child, through Build, and child drops counted by tbf.
func TestTBFBuildWithChild(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	rec := &recorder{}
	q, err := Build([]Spec{TBFConfig{Rate: oneMbit, Burst: 3000, Limit: 1}, FifoConfig{Limit: 2}}, &Env{Observer: rec, Framing: FramingIP})
	if err != nil {
		t.Fatal(err)
	}
	if q.Child().Kind() != "pfifo" {
		t.Fatalf("child %s, want pfifo", q.Child().Kind())
	}
	for i := range 3 {
		q.Enqueue(0, coretest.UDP(pool, 1500, 1000, 0, int64(i)))
	}
	if s := q.Stats(); s.Drops != 1 || s.DropsByReason[ReasonOversize] != 0 || s.Qlen != 2 {
		t.Errorf("tbf Stats %+v, want the child's drop counted", s)
	}
	if s := q.Child().Stats(); s.DropsByReason[ReasonLimit] != 1 {
		t.Errorf("child Stats %+v", s)
	}
	if got := departureTimes(tqDrain(t, q, 0, clock.Never-1)); !equalTimes(got, []clock.Time{0, 0}) {
		t.Errorf("departures %v", got)
	}
	coretest.CheckLive(t, pool, 0)
}

// BenchmarkTBF: rate 1gbit burst 64k limit 1m with its bfifo child, one
// 1500 B packet in and one out per op, the clock advancing by one packet
// time (12 us).
func BenchmarkTBF(b *testing.B) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	q, err := NewTBF(TBFConfig{Rate: 1000 * oneMbit, Burst: 64 << 10, Limit: 1 << 20}, &Env{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ps := make([]*packet.Packet, 64)
	for i := range ps {
		ps[i] = coretest.UDP(pool, 1500, 1000, 0, int64(i))
	}
	free := ps
	now := clock.Time(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now += 12 * us
		if len(free) > 0 {
			q.Enqueue(now, free[len(free)-1])
			free = free[:len(free)-1]
		}
		if p, _ := q.Dequeue(now); p != nil {
			free = append(free, p)
		}
	}
	b.StopTimer()
	if q.Stats().Packets < uint64(b.N)/2 {
		b.Fatalf("only %d of %d packets sent", q.Stats().Packets, b.N)
	}
}
