package tcspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

func mustParse(t *testing.T, s string, opt Options) qdisc.Spec {
	t.Helper()
	spec, err := Parse(s, opt)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return spec
}

func mustNetem(t *testing.T, s string) qdisc.NetemConfig {
	t.Helper()
	c, ok := mustParse(t, s, Options{}).(qdisc.NetemConfig)
	if !ok {
		t.Fatalf("Parse(%q) is not a NetemConfig", s)
	}
	return c
}

// netem builds the expected config: tc's default limit plus changes.
func netem(change func(c *qdisc.NetemConfig)) qdisc.NetemConfig {
	c := qdisc.NetemConfig{Limit: 1000}
	if change != nil {
		change(&c)
	}
	return c
}

func TestNetemSpecExamples(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in   string
		want qdisc.NetemConfig
	}{
		{"netem", netem(nil)},
		{"tc qdisc add dev eth0 root netem delay 100ms 10ms 25%", netem(func(c *qdisc.NetemConfig) {
			c.Delay, c.Jitter, c.DelayCorr = 100*ms, 10*ms, 0.25
		})},
		{"netem delay 10ms reorder 100% gap 5", netem(func(c *qdisc.NetemConfig) {
			c.Delay, c.Reorder, c.Gap = 10*ms, 1, 5
		})},
		{"netem loss state 1% 10%", netem(func(c *qdisc.NetemConfig) {
			// p32, p23, p14 take their defaults 0, 1, 0.
			c.Loss = qdisc.Loss{Kind: qdisc.LossState, P13: 0.01, P31: 0.1, P32: 0, P23: 1, P14: 0}
		})},
		{"netem loss state 1%", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossState, P13: 0.01, P31: 1 - 0.01, P23: 1}
		})},
		{"netem loss state 1% 10% 2% 90% 0.5%", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossState, P13: 0.01, P31: 0.1, P32: 0.02, P23: 0.9, P14: 0.005}
		})},
		{"netem loss gemodel 1% 10% 100% 0%", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossGEModel, GEP: 0.01, GER: 0.1, OneMinusH: 1, OneMinusK: 0}
		})},
		{"netem loss gemodel 5%", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossGEModel, GEP: 0.05, GER: 1 - 0.05, OneMinusH: 1}
		})},
		{"netem rate 5kbit 20 100 5", netem(func(c *qdisc.NetemConfig) {
			c.Rate, c.PacketOverhead, c.CellSize, c.CellOverhead = 625, 20, 100, 5
		})},
		{"netem rate 1mbit 0 48 5", netem(func(c *qdisc.NetemConfig) {
			c.Rate, c.CellSize, c.CellOverhead = 125000, 48, 5
		})},
		{"netem rate 10mbit 14", netem(func(c *qdisc.NetemConfig) {
			c.Rate, c.PacketOverhead = 1250000, 14
		})},
		{"netem rate 10mbit -4 53 -5", netem(func(c *qdisc.NetemConfig) {
			c.Rate, c.PacketOverhead, c.CellSize, c.CellOverhead = 1250000, -4, 53, -5
		})},
		{"netem delay 50ms rate 10mbit", netem(func(c *qdisc.NetemConfig) {
			c.Delay, c.Rate = 50*ms, 1250000
		})},
		{"netem limit 1k delay 100ms", netem(func(c *qdisc.NetemConfig) {
			c.Limit, c.Delay = 1024, 100*ms // limit is read by get_size
		})},
		{"netem loss 1% 25%", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossRandom, P: 0.01, Corr: 0.25}
		})},
		{"netem loss 1", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossRandom, P: 0.01} // "loss 1" is 1%
		})},
		{"netem drop random 0.3% 25%", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossRandom, P: 0.003, Corr: 0.25}
		})},
		{"netem loss 0%", netem(nil)}, // tc sends no loss at all
		{"netem loss 5% ecn", netem(func(c *qdisc.NetemConfig) {
			c.Loss = qdisc.Loss{Kind: qdisc.LossRandom, P: 0.05}
			c.ECN = true
		})},
		{"netem corrupt 0.1% duplicate 1% 50% reorder 25% 50% delay 10ms", netem(func(c *qdisc.NetemConfig) {
			c.Corrupt, c.Duplicate, c.DuplicateCorr, c.Reorder, c.ReorderCorr = 0.001, 0.01, 0.5, 0.25, 0.5
			c.Delay, c.Gap = 10*ms, 1 // gap defaults to 1 with reorder
		})},
		{"netem delay 100ms 10ms distribution normal", netem(func(c *qdisc.NetemConfig) {
			c.Delay, c.Jitter, c.Dist = 100*ms, 10*ms, qdisc.Distribution{Name: "normal"}
		})},
		{"netem slot 1ms", netem(func(c *qdisc.NetemConfig) { c.Slot.Min, c.Slot.Max = ms, ms })},
		{"netem slot 1ms 5ms packets 10 bytes 64k", netem(func(c *qdisc.NetemConfig) {
			c.Slot = qdisc.Slot{Min: ms, Max: 5 * ms, Packets: 10, Bytes: 65536}
		})},
		// Slot times have always been read with get_time64: a bare number
		// is ns, as in tc.
		{"netem slot 10 200 packets 2000 bytes 9000", netem(func(c *qdisc.NetemConfig) {
			c.Slot = qdisc.Slot{Min: 10, Max: 200, Packets: 2000, Bytes: 9000}
		})},
		{"netem slot distribution normal 1000 500", netem(func(c *qdisc.NetemConfig) {
			c.Slot = qdisc.Slot{Dist: qdisc.Distribution{Name: "normal"}, DistDelay: 1000, DistJitter: 500}
		})},
		{"netem slot distribution pareto 10ms 2ms bytes 1500", netem(func(c *qdisc.NetemConfig) {
			c.Slot = qdisc.Slot{Dist: qdisc.Distribution{Name: "pareto"}, DistDelay: 10 * ms, DistJitter: 2 * ms, Bytes: 1500}
		})},
		{"netem seed 18446744073709551615", netem(func(c *qdisc.NetemConfig) { c.Seed, c.SeedSet = 1<<64-1, true })},
		{"netem seed 0", netem(func(c *qdisc.NetemConfig) { c.SeedSet = true })},
		{"netem delay 10ms correlation kernel fifo_jitter oldgap", netem(func(c *qdisc.NetemConfig) {
			c.Delay, c.Correlation, c.FIFOJitter, c.OldGap = 10*ms, qdisc.CorrelationKernel, true, true
		})},
		{"netem delay 0 10ms", netem(func(c *qdisc.NetemConfig) { c.Jitter = 10 * ms })}, // bare 0 is unambiguous
		{"netem delay 1.5ms 100us 3", netem(func(c *qdisc.NetemConfig) {
			c.Delay, c.Jitter, c.DelayCorr = 1500*time.Microsecond, 100*time.Microsecond, 0.03
		})},
	}
	for _, tt := range tests {
		got := mustNetem(t, tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
	}
}

// Optional values are taken only when the next word starts with a digit
// (overheads also with a minus sign).
func TestNetemPositional(t *testing.T) {
	ms := time.Millisecond
	c := mustNetem(t, "netem delay 100ms 10ms loss 1%")
	if c.Jitter != 10*ms || c.DelayCorr != 0 || c.Loss.P != 0.01 {
		t.Errorf("delay 100ms 10ms loss 1%% = %+v", c)
	}
	// A correlation is not a time: "3ns" is not a percentage.
	if _, err := Parse("netem delay 1.5ms 100us 3ns", Options{}); err == nil || !strings.Contains(err.Error(), "3ns") {
		t.Errorf("delay 1.5ms 100us 3ns: %v, want an error naming 3ns", err)
	}
	// ".5ms" does not start with a digit: it is not taken as the jitter.
	if _, err := Parse("netem delay 1ms .5ms", Options{}); err == nil || !strings.Contains(err.Error(), ".5ms") {
		t.Errorf("delay 1ms .5ms: %v, want an error naming .5ms", err)
	}
	// A negative packet overhead is taken; a negative cell size is not a
	// cell size, so it becomes the cell overhead.
	c = mustNetem(t, "netem rate 1mbit 5 -3")
	if c.PacketOverhead != 5 || c.CellSize != 0 || c.CellOverhead != -3 {
		t.Errorf("rate 1mbit 5 -3 = %+v", c)
	}
	// Correlations stay when a later clause repeats the probability alone.
	c = mustNetem(t, "netem duplicate 1% 30% duplicate 2%")
	if c.Duplicate != 0.02 || c.DuplicateCorr != 0.3 {
		t.Errorf("duplicate twice = %v %v", c.Duplicate, c.DuplicateCorr)
	}
	// "loss" followed by something not a digit needs a model name.
	if _, err := Parse("netem loss .5%", Options{}); err == nil || !strings.Contains(err.Error(), ".5%") {
		t.Errorf("loss .5%%: %v", err)
	}
	// Slot budgets follow the slot, abbreviated as tc allows.
	c = mustNetem(t, "netem slot 2ms p 3 b 1k")
	if c.Slot.Min != 2*ms || c.Slot.Max != 2*ms || c.Slot.Packets != 3 || c.Slot.Bytes != 1024 {
		t.Errorf("slot 2ms p 3 b 1k = %+v", c.Slot)
	}
}

// Keywords are prefixes, and the first branch in tc's order wins.
func TestNetemPrefixes(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in    string
		check func(c qdisc.NetemConfig) bool
	}{
		{"netem d 5ms", func(c qdisc.NetemConfig) bool { return c.Delay == 5*ms }},
		{"netem la 5ms", func(c qdisc.NetemConfig) bool { return c.Delay == 5*ms }},       // latency
		{"netem l 5", func(c qdisc.NetemConfig) bool { return c.Limit == 5 }},             // limit before latency
		{"netem lo 5%", func(c qdisc.NetemConfig) bool { return c.Loss.P == 0.05 }},       // loss
		{"netem dr 5%", func(c qdisc.NetemConfig) bool { return c.Loss.P == 0.05 }},       // drop
		{"netem du 5%", func(c qdisc.NetemConfig) bool { return c.Duplicate == 0.05 }},    // duplicate
		{"netem c 5%", func(c qdisc.NetemConfig) bool { return c.Corrupt == 0.05 }},       // corrupt
		{"netem r 5% d 1ms", func(c qdisc.NetemConfig) bool { return c.Reorder == 0.05 }}, // reorder before rate
		{"netem ra 1mbit", func(c qdisc.NetemConfig) bool { return c.Rate == 125000 }},
		{"netem s 7", func(c qdisc.NetemConfig) bool { return c.SeedSet && c.Seed == 7 }}, // seed before slot
		{"netem sl 1ms", func(c qdisc.NetemConfig) bool { return c.Slot.Min == ms }},
		{"netem lo 1% e", func(c qdisc.NetemConfig) bool { return c.ECN }},
		{"netem d 1ms 1ms dist pareto", func(c qdisc.NetemConfig) bool { return c.Dist.Name == "pareto" }},
		{"netem d 1ms r 50% g 3", func(c qdisc.NetemConfig) bool { return c.Gap == 3 }},
	}
	for _, tt := range tests {
		if c := mustNetem(t, tt.in); !tt.check(c) {
			t.Errorf("Parse(%q) = %+v", tt.in, c)
		}
	}
	// "di" is distribution, so "di 5%" is a distribution named "5%".
	if _, err := Parse("netem delay 1ms 1ms di 5%", Options{}); err == nil || !strings.Contains(err.Error(), "5%") {
		t.Errorf("di 5%%: %v", err)
	}
}

func TestNetemErrors(t *testing.T) {
	tests := []struct {
		in, token string
		msg       []string // substrings the message must contain
	}{
		{"netem gap 5 delay 10ms", "gap", []string{`"gap 5" without reorder`, "reorder 100% gap 5"}},
		{"netem reorder 25%", "reorder", []string{"without a delay", "delay 10ms"}},
		{"netem ecn", "ecn", []string{"without a loss model"}},
		{"netem loss 0% ecn", "ecn", []string{"without a loss model"}},
		{"netem delay 10ms distribution normal", "distribution", []string{"without a delay and a jitter"}},
		{"netem distribution normal", "distribution", []string{"without a delay and a jitter"}},
		{"netem delay 10mz", "10mz", []string{`"delay 10mz": bad time "10mz": use a number with a unit: ns, us, ms, s`}},
		{"netem delay 100", "100", []string{"write 100ms or 100us", "bare number means ns"}},
		{"netem delay 10ms 5", "5", []string{"write 5ms or 5us"}},
		{"netem delay -5ms", "-5ms", []string{"negative"}},
		// tc takes any 64-bit number of ns, which wanlab's clock cannot add
		// to a time: the limit is named.
		{"netem delay 9223372036s", "9223372036s", []string{`"delay 9223372036s" exceeds 2^62 ns (about 146 years)`}},
		{"netem delay 1s 9223372036s", "9223372036s", []string{`"jitter 9223372036s" exceeds 2^62 ns`}},
		{"netem slot 1ms 5000000000s", "5000000000s", []string{"exceeds 2^62 ns"}},
		{"netem delay", "delay", []string{`"delay" needs a value`}},
		{"netem foo", "foo", []string{`"foo" is not a netem option`, "delay TIME", "slot MIN"}},
		{"netem help", "help", []string{"netem takes"}},
		{"netem loss 101%", "101%", []string{"bad percentage"}},
		{"netem loss nan", "nan", []string{"unknown loss model"}},
		{"netem loss random nan", "nan", []string{"bad percentage"}},
		{"netem loss 1% loss 2%", "loss", []string{"already given"}},
		{"netem loss state 1% loss 2%", "loss", []string{"already given"}},
		{"netem loss bursty 1%", "bursty", []string{"unknown loss model"}},
		{"netem limit 0", "0", []string{"at least 1"}},
		{"netem limit 10x", "10x", []string{"bad size"}},
		{"netem gap -1", "-1", []string{"negative"}},
		{"netem gap 0x100000000", "0x100000000", []string{"at most"}},
		{"netem rate 10mbitz", "10mbitz", []string{"bad rate", "unknown unit"}},
		{"netem rate 50%", "50%", []string{"link speed"}},
		{"netem rate 1mbit 1 2 3000000000", "3000000000", []string{"cell overhead"}},
		{"netem seed -1", "-1", []string{"negative"}},
		{"netem seed x", "x", []string{"whole number"}},
		{"netem slot 5ms 1ms", "1ms", []string{"below the minimum"}},
		{"netem slot foo", "foo", []string{"slot MIN"}},
		{"netem slot distribution normal 10ms 0ms", "0ms", []string{"positive jitter"}},
		{"netem slot distribution normal 10ms", "slot distribution normal 10ms", []string{"needs a value"}},
		{"netem slot 1ms slot 2ms", "slot", []string{"twice"}},
		{"netem slot 1ms packets -1", "-1", []string{"negative"}},
		{"netem slot 1ms bytes 3g", "3g", []string{"2Gb"}},
		{"netem delay 1ms 1ms distribution mine", "mine", []string{"uniform, normal, pareto or paretonormal"}},
		{"netem correlation exactish", "exactish", []string{"correlation kernel"}},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in, Options{})
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Parse(%q) = %v, want an *Error", tt.in, err)
			continue
		}
		if te.Kind != "netem" || te.Token != tt.token || te.Index != 0 {
			t.Errorf("Parse(%q): Kind %q Token %q Index %d; want netem %q 0 (%v)", tt.in, te.Kind, te.Token, te.Index, tt.token, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "netem: ") {
			t.Errorf("Parse(%q): %q lacks the prefix", tt.in, msg)
		}
		for _, m := range tt.msg {
			if !strings.Contains(msg, m) {
				t.Errorf("Parse(%q): %q does not say %q", tt.in, msg, m)
			}
		}
	}
}

func TestNetemPercentRate(t *testing.T) {
	c, err := Parse("netem rate 10% 14", Options{LinkSpeed: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.(qdisc.NetemConfig); n.Rate != 100e6/8 || n.PacketOverhead != 14 {
		t.Errorf("rate 10%% of 1 Gbit/s = %+v", n)
	}
}

func TestNetemLoadDist(t *testing.T) {
	table := []int16{-3, 0, 3}
	var asked []string
	opt := Options{LoadDist: func(name string) ([]int16, error) {
		asked = append(asked, name)
		switch name {
		case "experimental":
			return table, nil
		case "empty":
			return nil, nil
		}
		return nil, errors.New("no such file")
	}}
	c := mustParse(t, "netem delay 10ms 2ms distribution experimental slot distribution normal 1ms 1ms", opt).(qdisc.NetemConfig)
	if !reflect.DeepEqual(c.Dist, qdisc.Distribution{Name: "experimental", Table: table}) {
		t.Errorf("Dist = %+v", c.Dist)
	}
	if c.Slot.Dist.Name != "normal" || c.Slot.Dist.Table != nil {
		t.Errorf("built-in slot distribution = %+v, want normal with no table", c.Slot.Dist)
	}
	if !reflect.DeepEqual(asked, []string{"experimental"}) {
		t.Errorf("LoadDist asked for %v; built-in names must not be loaded", asked)
	}
	for _, name := range []string{"empty", "missing"} {
		_, err := Parse("netem delay 10ms 2ms distribution "+name, opt)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("distribution %s: %v", name, err)
		}
	}
	big := make([]int16, maxDist+1)
	_, err := Parse("netem delay 10ms 2ms distribution big", Options{LoadDist: func(string) ([]int16, error) { return big, nil }})
	if err == nil || !strings.Contains(err.Error(), "16384") {
		t.Errorf("oversized table: %v", err)
	}
}

// prob32 decides, as tc's u32 does, whether a tiny probability is zero.
func TestNetemTinyReorderIsNone(t *testing.T) {
	if _, err := Parse("netem reorder 1e-12%", Options{}); err != nil {
		t.Errorf("reorder 1e-12%% rounds to 0 in tc and needs no delay: %v", err)
	}
	if _, err := Parse("netem reorder 1e-12% gap 2 delay 1ms", Options{}); err == nil {
		t.Error("gap with a reorder probability that rounds to 0: want tc's error")
	}
}
