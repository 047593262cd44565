package qdisc

import (
	"strings"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/packet"
)

func TestNewNetemValidation(t *testing.T) {
	pool := packet.NewPool(2048, packet.DefaultHeadroom)
	big := make([]int16, MaxDistTable+1)
	for _, tc := range []struct {
		name string
		cfg  NetemConfig
		want string // substring of the error
	}{
		{"reorder needs delay", NetemConfig{Reorder: 0.25}, "reordering not possible without specifying some delay"},
		{"gap needs reorder", NetemConfig{Delay: 10 * time.Millisecond, Gap: 5}, "use reorder 100% gap 5"},
		{"ecn needs loss", NetemConfig{ECN: true}, "ecn requested without loss model"},
		{"ecn needs nonzero random loss", NetemConfig{ECN: true, Loss: Loss{Kind: LossRandom}}, "ecn requested without loss model"},
		{"distribution needs jitter", NetemConfig{Delay: time.Millisecond, Dist: Distribution{Name: "normal"}}, "no latency and jitter"},
		{"distribution needs delay", NetemConfig{Jitter: time.Millisecond, Dist: Distribution{Name: "normal"}}, "no latency and jitter"},
		{"unknown distribution", NetemConfig{Delay: time.Millisecond, Jitter: time.Millisecond, Dist: Distribution{Name: "experimental"}}, "load experimental.dist"},
		{"table too big", NetemConfig{Delay: time.Millisecond, Jitter: time.Millisecond, Dist: Distribution{Name: "x", Table: big}}, "1 to 16384"},
		{"jitter too big", NetemConfig{Delay: time.Second, Jitter: 3 * time.Second}, "give at most 2147483647ns"},
		{"negative delay", NetemConfig{Delay: -time.Millisecond}, "negative delay"},
		{"negative jitter", NetemConfig{Jitter: -time.Millisecond}, "negative jitter"},
		{"negative slot", NetemConfig{Slot: Slot{Min: -1}}, "negative slot min"},
		{"slot min > max", NetemConfig{Slot: Slot{Min: 2 * time.Millisecond, Max: time.Millisecond}}, "MIN <= MAX"},
		{"negative slot budget", NetemConfig{Slot: Slot{Max: time.Millisecond, Packets: -1}}, "negative slot budget"},
		{"uniform slot distribution", NetemConfig{Slot: Slot{Dist: Distribution{Name: "uniform"}, DistJitter: 1}}, "slot distribution needs a table"},
		{"loss > 1", NetemConfig{Loss: Loss{Kind: LossRandom, P: 1.5}}, "loss 1.5 is outside [0, 1]"},
		{"negative correlation", NetemConfig{Duplicate: 0.1, DuplicateCorr: -0.1}, "duplicate correlation -0.1 is outside"},
		{"NaN", NetemConfig{Corrupt: nan()}, "corrupt NaN is outside"},
		{"gemodel r > 1", NetemConfig{Loss: Loss{Kind: LossGEModel, GER: 2}}, "loss gemodel r 2"},
		{"loss fields without kind", NetemConfig{Loss: Loss{P: 0.1}}, "set Kind to LossRandom"},
		{"negative limit", NetemConfig{Limit: -1}, "limit -1 is negative"},
	} {
		_, err := NewNetem(tc.cfg, &Env{Pool: pool}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewNetem(NetemConfig{Duplicate: 0.1}, &Env{}, nil); err == nil || !strings.Contains(err.Error(), "Env.Pool") {
		t.Errorf("duplicate without a pool: error %v, want one naming Env.Pool", err)
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestNetemConfigDefaults(t *testing.T) {
	n, err := NewNetem(NetemConfig{Delay: 10 * time.Millisecond, Jitter: time.Millisecond, Reorder: 0.1, Dist: Distribution{Name: "pareto"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := n.Config().(NetemConfig)
	if c.Limit != DefaultNetemLimit || c.Gap != 1 || len(c.Dist.Table) != 4096 || c.Dist.Name != "pareto" {
		t.Errorf("Config() = limit %d gap %d table %d %q; want 1000, 1, the 4096-entry pareto table", c.Limit, c.Gap, len(c.Dist.Table), c.Dist.Name)
	}
	if n.Kind() != "netem" || n.Child() != nil {
		t.Errorf("Kind %q Child %v", n.Kind(), n.Child())
	}
	q, err := Build([]Spec{NetemConfig{Delay: time.Millisecond}}, &Env{})
	if err != nil || q.Kind() != "netem" {
		t.Errorf("Build netem: %v, %v", q, err)
	}
}

func TestNetemWarnings(t *testing.T) {
	has := func(ws []string, sub string) bool {
		for _, w := range ws {
			if strings.Contains(w, sub) {
				return true
			}
		}
		return false
	}
	w := Warnings(NetemConfig{Loss: Loss{Kind: LossRandom, P: 0.01, Corr: 0.25}}, nil)
	if !has(w, "loss 1% 25%: the kernel loses about 0.000% (not 1%)") || !has(w, "add 'correlation kernel'") {
		t.Errorf("loss 1%% 25%%: warnings %q", w)
	}
	w = Warnings(NetemConfig{Reorder: 0.25, ReorderCorr: 0.5, Delay: time.Millisecond, Correlation: CorrelationKernel}, nil)
	if !has(w, "reorder 25% 50%: the kernel reorders about 7.") || !has(w, "'correlation kernel' reproduces that") {
		t.Errorf("reorder 25%% 50%% kernel: warnings %q", w)
	}
	// 50% 50% is unbiased: the kernel's average crowds around 2^31.
	if w := Warnings(NetemConfig{Loss: Loss{Kind: LossRandom, P: 0.5, Corr: 0.5}}, nil); len(w) != 0 {
		t.Errorf("loss 50%% 50%%: unexpected warnings %q", w)
	}
	if w := Warnings(NetemConfig{Loss: Loss{Kind: LossRandom, P: 0.01}}, nil); len(w) != 0 {
		t.Errorf("uncorrelated loss: unexpected warnings %q", w)
	}
	w = Warnings(NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, DelayCorr: 0.5}, nil)
	if !has(w, "delay correlation is nearly a no-op") || !has(w, "45.1% of adjacent packets swap") || !has(w, "fifo_jitter") {
		t.Errorf("delay 100ms 10ms 50%%: warnings %q", w)
	}
	if w := Warnings(NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, FIFOJitter: true}, nil); len(w) != 0 {
		t.Errorf("fifo_jitter: unexpected warnings %q", w)
	}
	if w := Warnings(NetemConfig{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Rate: mbit(10)}, nil); len(w) != 0 {
		t.Errorf("jitter with rate: unexpected warnings %q", w)
	}
}

// Configurations whose numbers would overflow wanlab's int64 nanosecond
// clock, or mean something else than they say, are refused with the
// limit; tc and the kernel take them (and the kernel's s64 arithmetic
// wraps such delays into the past).
func TestNetemRefusesNonsense(t *testing.T) {
	for _, tc := range []struct {
		cfg  NetemConfig
		want string
	}{
		{NetemConfig{Delay: 9223372036 * time.Second}, "2^62 ns"},
		{NetemConfig{Slot: Slot{Min: time.Millisecond, Max: MaxNetemDelay + 1}}, "slot max"},
		{NetemConfig{Loss: Loss{Kind: LossState, P13: 0.6, P31: 0.4, P23: 1, P14: 0.5}}, "p13 60% and p14 50%"},
		{NetemConfig{Loss: Loss{Kind: LossState, P13: 0.1, P31: 0.7, P32: 0.4, P23: 1}}, "sum to 110%"},
	} {
		if _, err := NewNetem(tc.cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := NewNetem(NetemConfig{Delay: MaxNetemDelay}, nil, nil); err != nil {
		t.Errorf("the longest delay: %v", err)
	}
}

// Departure times saturate near the end of int64 nanoseconds instead of
// wrapping into the past: at 1 byte/s with a 2^31-byte overhead each packet
// takes 68 years, so the fourth and later are all held at the horizon.
func TestNetemTimesSaturate(t *testing.T) {
	b := newBench(t, NetemConfig{Rate: 1, PacketOverhead: 1<<31 - 1})
	var prev clock.Time
	for i := range 6 {
		p, v := b.send(0, 100)
		if v != Queued || p.TimeToSend < prev || p.TimeToSend <= 0 {
			t.Fatalf("packet %d: verdict %v, due at %v after %v", i, v, p.TimeToSend, prev)
		}
		prev = p.TimeToSend
	}
	if prev != horizon {
		t.Errorf("the last packet is due at %v, want the horizon %v", prev, horizon)
	}
	if p, next := b.q.Dequeue(clock.Time(time.Hour)); p != nil || next != (1<<31-1+114)*clock.Time(time.Second) {
		t.Errorf("Dequeue(1h) = %v, %v; want nothing until the first packet's 68 years", p, next)
	}
	w := Warnings(NetemConfig{Rate: 1, PacketOverhead: 1<<31 - 1}, nil)
	if len(w) != 1 || !strings.Contains(w[0], "292 years") {
		t.Errorf("warnings %q", w)
	}
	b.q.Flush(0)
	b.checkLeaks(0)
}

// Two chances of leaving a state may add up to exactly 100%: the model
// then leaves the state for sure. (The kernel's u32 sum of the rounded
// thresholds wraps to 0 there, and it would stay.) With p13 = p14 = 50%
// and p31 = 100%, every other packet is lost.
func TestNetemLossStateFullSum(t *testing.T) {
	b := newBench(t, NetemConfig{Loss: Loss{Kind: LossState, P13: 0.5, P14: 0.5, P31: 1, P23: 1}})
	lost := 0
	for i := range 1000 {
		if _, v := b.send(clock.Time(i), 100); v == Dropped {
			lost++
		}
		b.drain(clock.Time(i), false)
	}
	if lost != 500 {
		t.Errorf("%d of 1000 lost, want 500", lost)
	}
	b.checkLeaks(0)
}
