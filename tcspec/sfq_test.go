package tcspec

import (
	"errors"
	"strings"
	"testing"

	"wanlab/qdisc"
)

// sfq's options read as tc's sfq_parse_opt reads them, the RED mode's
// defaults filled in as tc computes them.
func TestSFQParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want qdisc.SFQConfig
	}{
		{"sfq", qdisc.SFQConfig{}},
		{"sfq perturb 10 quantum 1514 limit 100 divisor 1024", qdisc.SFQConfig{Perturb: 10, Quantum: 1514, Limit: 100, Divisor: 1024}},
		{"sfq quantum 1.5k divisor 0x40 flows 010 depth 3 headdrop perturb 0", qdisc.SFQConfig{Quantum: 1536, Divisor: 64, Flows: 8, Depth: 3, HeadDrop: true}},
		{"sfq limit 5 limit 7", qdisc.SFQConfig{Limit: 7}},
		{"tc qdisc add dev eth0 parent 1:1 handle 10: sfq perturb 10", qdisc.SFQConfig{Perturb: 10}},
		{"sfq limit 3000 depth 64 flows 512 headdrop redflowlimit 100000 min 8000 max 60000 probability 0.2 ecn harddrop",
			qdisc.SFQConfig{Limit: 3000, Depth: 64, Flows: 512, HeadDrop: true, RedFlowLimit: 100000, Min: 8000, Max: 60000,
				Avpkt: 1000, Burst: 25, Probability: 0.2, ECN: true, HardDrop: true}},
		{"sfq redflowlimit 120000 avpkt 1k", qdisc.SFQConfig{RedFlowLimit: 120000, Min: 10000, Max: 30000, Avpkt: 1024, Burst: 16, Probability: 0.02}},
		// tc reads the probability with sscanf("%lg"): what follows the
		// number is ignored.
		{"sfq redflowlimit 120000 probability 5e-2x", qdisc.SFQConfig{RedFlowLimit: 120000, Min: 10000, Max: 30000, Avpkt: 1000, Burst: 16, Probability: 0.05}},
	} {
		got, err := Parse(c.in, Options{})
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// What tc (or the kernel, which tc's command then fails on) refuses is
// refused, naming the word and the fix.
func TestSFQParseErrors(t *testing.T) {
	for _, c := range []struct {
		in, token, msg string
	}{
		{"sfq limit 1", "1", "must be 2 packets or more"},
		{"sfq limit 0", "0", "must be 2 packets or more"},
		{"sfq lim 10", "lim", `"lim" is not a sfq option`}, // whole words only
		{"sfq quantum 0", "0", "keeps its default (psched_mtu"},
		{"sfq flows 0", "0", "default (128)"},
		{"sfq depth 1k", "1k", "whole number"}, // get_u32, not get_size
		{"sfq min 8k redflowlimit 100000", "8k", "whole number"},
		{"sfq perturb 1.5", "1.5", "whole number"},
		{"sfq perturb -1", "", "perturb -1 out of range"},
		{"sfq divisor 1000", "", "not a power of two"},
		{"sfq quantum 300000", "", "exceeds 262136 bytes"},
		{"sfq limit 2 depth 1 flows 1", "", "leaves a limit of 1 packet"},
		{"sfq ecn", "", "need redflowlimit"},
		{"sfq redflowlimit 0 min 10", "0", "Required parameter (redflowlimit) is missing"},
		{"sfq redflowlimit 50000 max 60000", "", "larger than redflowlimit"},
		{"sfq redflowlimit 100000 min 60000 max 50000", "", "min 60000 is not smaller than max 50000"},
		{"sfq redflowlimit 100000 burst 1", "", "give burst 9 or more"},
		{"sfq redflowlimit 100000 avpkt 0", "0", "must not be 0"},
		{"sfq redflowlimit 100000 probability 1", "1", "between 0 and 1"},
		{"sfq quantum", "quantum", "needs a value"},
	} {
		_, err := Parse(c.in, Options{})
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Parse(%q) = %v, want an *Error", c.in, err)
			continue
		}
		if te.Kind != "sfq" || te.Token != c.token || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Parse(%q) = %v (Token %q); want token %q, containing %q", c.in, err, te.Token, c.token, c.msg)
		}
	}
}

// The options line is sfq_print_opt's without -d, from the kernel's dump:
// on a TUN device the default quantum is 1500 bytes, and a given limit
// larger than depth·flows shows lowered. For redflowlimit 120000 tc's
// defaults are max 30000, min 10000, burst (20000 + 30000)/3000 = 16, and
// tc_red_eval_ewma's first Wlog with 16 + 1 - 10000/1000 = 7 <= (1 -
// (1-W)^16)/W is 3 (W = 1/8 gives 7.05; 1/4 gives 3.96).
func TestSFQShow(t *testing.T) {
	for _, c := range []struct {
		in   string
		env  *qdisc.Env
		want string
	}{
		{"sfq", &qdisc.Env{Framing: qdisc.FramingIP}, "limit 127p quantum 1500b depth 127 divisor 1024 "},
		{"sfq limit 1000 depth 10 flows 16 quantum 3000", nil, "limit 160p quantum 3000b depth 10 divisor 1024 "},
		{"sfq redflowlimit 120000 harddrop", nil, "limit 127p quantum 1514b depth 127 divisor 1024 ewma 3 min 10000b max 30000b probability 0.02 harddrop "},
	} {
		s, err := Parse(c.in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := showOptions(s, Placement{}, c.env); got != c.want {
			t.Errorf("%s: %q, want %q", c.in, got, c.want)
		}
	}
}
