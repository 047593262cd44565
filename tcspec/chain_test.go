package tcspec

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

func TestParseChainSpecExample(t *testing.T) {
	got, err := ParseChain("netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms; fq_codel", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []qdisc.Spec{
		qdisc.NetemConfig{Limit: 1000, Delay: 50 * time.Millisecond},
		// 1250000 B/s · 0.05 s + 32768 = 95268
		qdisc.TBFConfig{Rate: 1250000, Burst: 32768, Limit: 95268},
		qdisc.FQCoDelConfig{Limit: 10240, Flows: 1024, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, ECN: true, MemoryLimit: 32 << 20, DropBatch: 64},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func TestParseChainScript(t *testing.T) {
	script := `
# the bottleneck
tc qdisc add dev eth0 root handle 1: netem \
    delay 100ms 10ms
tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate 10mbit buffer 10000 limit 30000   # shaper
sudo tc qdisc replace dev eth0 parent 10: fq_codel noecn
`
	got, err := ParseChain(script, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d qdiscs: %#v", len(got), got)
	}
	if n := got[0].(qdisc.NetemConfig); n.Delay != 100*time.Millisecond || n.Jitter != 10*time.Millisecond {
		t.Errorf("netem = %+v", n)
	}
	if tb := got[1].(qdisc.TBFConfig); tb.Burst != 10000 || tb.Limit != 30000 {
		t.Errorf("tbf = %+v", tb)
	}
	if fq := got[2].(qdisc.FQCoDelConfig); fq.ECN {
		t.Errorf("fq_codel = %+v", fq)
	}
}

func TestParseChainEmpty(t *testing.T) {
	for _, s := range []string{"", "   ", "\n\n", "# nothing\n", " ; ; "} {
		specs, err := ParseChain(s, Options{})
		if specs != nil || err != nil {
			t.Errorf("ParseChain(%q) = %v, %v; want nil, nil", s, specs, err)
		}
	}
}

func TestParseChainErrorIndex(t *testing.T) {
	_, err := ParseChain("netem delay 1ms; tbf rate 1mbit", Options{})
	var te *Error
	if !errors.As(err, &te) || te.Index != 1 || te.Kind != "tbf" {
		t.Fatalf("err = %#v", err)
	}
	if !strings.HasPrefix(err.Error(), "tbf (qdisc 2 of the chain): ") {
		t.Errorf("message %q does not place the error", err)
	}
	_, err = ParseChain("netem delay 1ms; bogus", Options{})
	if !errors.As(err, &te) || te.Index != 1 || te.Token != "bogus" || !strings.Contains(err.Error(), "qdisc 2 of the chain") {
		t.Errorf("unknown kind in a chain: %v", err)
	}
}

func TestParseOne(t *testing.T) {
	if _, err := Parse("netem; tbf rate 1mbit burst 1k limit 1k", Options{}); err == nil || !strings.Contains(err.Error(), "ParseChain") {
		t.Errorf("two qdiscs to Parse: %v", err)
	}
	if _, err := Parse("  ", Options{}); err == nil {
		t.Error("Parse of nothing: want an error")
	}
}

func TestCommandLines(t *testing.T) {
	ok := []string{
		"tc qdisc add dev eth0 root netem delay 1ms",
		"tc qdisc a dev eth0 root netem delay 1ms",
		"tc qdisc change dev eth0 root netem delay 1ms",
		"tc qdisc c dev eth0 root netem delay 1ms",
		"tc qdisc replace dev eth0 root netem delay 1ms",
		"tc qdisc r dev eth0 root netem delay 1ms",
		"tc q add dev eth0 root netem delay 1ms",
		"tc -s -d qdisc add dev eth0 root netem delay 1ms",
		"tc -n ns1 qdisc add dev eth0 root netem delay 1ms",
		"tc -netns ns1 -iec qdisc add dev eth0 root netem delay 1ms",
		"sudo tc qdisc add dev eth0 root handle 1: netem delay 1ms",
		"tc qdisc add dev eth0 parent 1:1 handle 10: netem delay 1ms",
		"tc qdisc add dev eth0 root estimator 1s 8s netem delay 1ms",
		"qdisc add dev eth0 root netem delay 1ms", // a tc -batch line
	}
	for _, s := range ok {
		c, err := Parse(s, Options{})
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if n, isNetem := c.(qdisc.NetemConfig); !isNetem || n.Delay != time.Millisecond {
			t.Errorf("Parse(%q) = %#v", s, c)
		}
	}
	bad := []struct{ in, token, msg string }{
		{"tc qdisc chg dev eth0 root netem", "chg", "unknown tc qdisc command"}, // tc has no "chg"
		{"tc qdisc del dev eth0 root", "del", "does not configure a qdisc"},
		{"tc qdisc d dev eth0 root", "d", "does not configure"}, // d is delete
		{"tc qdisc link dev eth0 root netem", "link", "does not configure"},
		{"tc qdisc show dev eth0", "show", "does not configure"},
		{"tc class add dev eth0 parent 1: classid 1:1 htb rate 1mbit", "class", "only \"tc qdisc\""},
		{"tc filter add dev eth0", "filter", "only \"tc qdisc\""},
		{"tc qdisc add dev eth0 root", "", "no qdisc kind"},
		{"tc qdisc add dev eth0 ingress", "ingress", "not a queueing discipline"},
		{"tc qdisc add dev eth0 root stab overhead 24 netem", "stab", "not supported"},
		{"tc qdisc add dev eth0 root hfsc", "hfsc", "not supported by wanlab"},
		{"tc qdisc add dev eth0 root netme delay 1ms", "netme", "unknown qdisc"},
		{"tc qdisc add dev", "dev", "needs a value"},
		{"tc -batch cmds", "-batch", "paste the commands"},
		{"tc qdisc", "", "no command"},
	}
	for _, tt := range bad {
		_, err := Parse(tt.in, Options{})
		var te *Error
		if !errors.As(err, &te) || te.Token != tt.token || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Parse(%q) = %v; want token %q and %q", tt.in, err, tt.token, tt.msg)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct{ in, want string }{
		{"netem delay 100ms 10ms 25%", "netem limit 1000 delay 100ms 10ms 25%"},
		{"netem d 1.5ms", "netem limit 1000 delay 1500us"},
		{"netem loss state 1% 10%", "netem limit 1000 loss state 1% 10%"},
		{"netem loss state 1%", "netem limit 1000 loss state 1%"},
		{"netem loss state 1% 99% 0 100% 0%", "netem limit 1000 loss state 1%"},
		{"netem loss state 1% 10% 0 90%", "netem limit 1000 loss state 1% 10% 0% 90%"},
		{"netem loss gemodel 1% 10% 100% 0%", "netem limit 1000 loss gemodel 1% 10%"},
		{"netem loss 1 ecn", "netem limit 1000 loss random 1% ecn"},
		{"netem delay 10ms reorder 100% gap 5", "netem limit 1000 delay 10ms reorder 100% gap 5"},
		{"netem delay 10ms reorder 25%", "netem limit 1000 delay 10ms reorder 25%"},
		{"netem rate 5kbit 20 100 5", "netem limit 1000 rate 5Kbit 20 100 5"},
		{"netem rate 1mbit 0 48", "netem limit 1000 rate 1Mbit 0 48"},
		{"netem rate 10mbps", "netem limit 1000 rate 80Mbit"},
		{"netem slot 1ms packets 3", "netem limit 1000 slot 1ms 1ms packets 3"},
		{"tbf rate 1mbit burst 32kbit latency 400ms", "tbf rate 1Mbit burst 4Kb limit 54096"},
		{"bfifo limit 30000", "bfifo limit 30000"},
		{"pfifo limit 1k", "pfifo limit 1024"},
		{"pfifo_fast", "pfifo_fast"},
		{"codel", "codel limit 1000 target 5ms interval 100ms"},
		{"fq_codel", "fq_codel limit 10240 flows 1024 target 5ms interval 100ms memory_limit 32Mb drop_batch 64 ecn"},
		{"pie ecn", "pie limit 1000 target 15ms tupdate 15ms alpha 2 beta 20 ecn"},
		{"fq_pie ecn", "fq_pie limit 10240 flows 1024 target 15ms tupdate 15ms alpha 2 beta 20 memory_limit 32Mb ecn_prob 10 ecn"},
	}
	for _, tt := range tests {
		if got := Format(mustParse(t, tt.in, Options{})); got != tt.want {
			t.Errorf("Format(Parse(%q)) = %q, want %q", tt.in, got, tt.want)
		}
	}
	specs := []qdisc.Spec{qdisc.PfifoFastConfig{}, qdisc.FifoConfig{Variant: "pfifo", Limit: 5}}
	if got := FormatChain(specs); got != "pfifo_fast; pfifo limit 5" {
		t.Errorf("FormatChain = %q", got)
	}
}

// Configurations are values: a pointer to one is not formatted (and does
// not panic); it prints as its kind, as a kind tcspec does not know does.
func TestFormatPointersAndOthers(t *testing.T) {
	tests := []struct {
		in   qdisc.Spec
		want string
	}{
		{&qdisc.TBFConfig{Rate: 125000, Burst: 4096, Limit: 54096}, "tbf"},
		{&qdisc.PIEConfig{Limit: 5}, "pie"},
		{nil, ""},
		{other{}, "choke"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// tcspec's registry and qdisc's name the same kinds: a discipline tcspec
// reads can be built, and every one that can be built can be read.
func TestKindsMatchQdisc(t *testing.T) {
	var ours []string
	for _, k := range kinds {
		ours = append(ours, k.name)
	}
	slices.Sort(ours)
	if theirs := qdisc.Kinds(); !slices.Equal(ours, theirs) {
		t.Errorf("tcspec reads %v, qdisc builds %v", ours, theirs)
	}
	// Each row reads and prints its own kind.
	for _, k := range kinds {
		text := k.name
		switch k.name {
		case "tbf":
			text += " rate 1mbit burst 4k latency 50ms"
		case "red":
			text += " limit 400000 avpkt 1000"
		}
		s, err := Parse(text, Options{})
		if err != nil || s.Kind() != k.name || !strings.HasPrefix(Format(s), k.name) {
			t.Errorf("%s: Parse = %v, %v; Format %q", k.name, s, err, Format(s))
		}
	}
}

type other struct{}

func (other) Kind() string { return "choke" }

// A message quotes at most the first 60 bytes of any input, with its
// length: a pasted file or a runaway argument is not echoed whole.
func TestLongInputIsQuotedInPart(t *testing.T) {
	long := strings.Repeat("a", 120000)
	for _, in := range []string{
		"netem " + long,
		strings.Repeat("netem delay 1ms; ", 7000) + "netem delay " + long,
		"tc qdisc frob dev eth0 root " + long,
		"netem delay " + strings.Repeat("9", 100000) + "ms",
		"tbf rate 1mbit burst 32k latency " + long,
		"fq_codel flows " + long,
	} {
		_, err := ParseChain(in, Options{})
		if err == nil {
			t.Errorf("ParseChain(%.40q...) accepted", in)
			continue
		}
		if msg := err.Error(); len(msg) > 600 || !strings.Contains(msg, "bytes)") {
			t.Errorf("ParseChain(%.40q...): a %d-byte message: %.300s", in, len(msg), msg)
		}
		var te *Error
		if errors.As(err, &te) && len(te.Token) > 63 {
			t.Errorf("token of %d bytes", len(te.Token))
		}
	}
	if got := Quote("short"); got != `"short"` {
		t.Errorf("Quote(short) = %s", got)
	}
	if got := Quote(strings.Repeat("é", 40)); got != `"`+strings.Repeat("é", 30)+`"... (80 bytes)` {
		t.Errorf("Quote cuts inside a rune: %s", got)
	}
}

// Messages say what was typed: the correlation of "loss 1% 200%" is
// quoted as "loss 1% 200%", and a zero tbf rate is not called missing.
func TestMessagesQuoteWhatWasTyped(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"netem loss 1% 200%", `"loss 1% 200%": correlation: bad percentage "200%"`},
		{"netem delay 10ms 1ms 300%", `"delay 10ms 1ms 300%": correlation: bad percentage`},
		{"netem loss state 10% 110%", `"loss state 10% 110%": p31: bad percentage`},
		{"netem rate 1mbit 20 9x", `"rate 1mbit 20 9x": cell size: bad number`},
		{"tbf rate 0 burst 32k latency 50ms", `"rate 0": tbf cannot work with a zero rate`},
		{"tbf rate 1mbit burst 0 latency 50ms", `"burst 0": tbf cannot work with a zero burst`},
		{"tbf rate 1mbit burst 32k limit 0", `"limit 0": tbf cannot work with a zero limit`},
	} {
		_, err := Parse(tc.in, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want it to contain %s", tc.in, err, tc.want)
		}
	}
}

// No kind wanlab emulates is still listed as one it does not.
func TestUnsupportedAreNotKinds(t *testing.T) {
	for _, k := range kinds {
		if unsupported[k.name] {
			t.Errorf("%s is emulated and still in unsupported", k.name)
		}
	}
}
