package qdisc

import (
	"strings"
	"testing"
	"time"

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
