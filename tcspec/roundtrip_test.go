package tcspec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fuzzOptions gives every test a deterministic distribution loader and a
// link speed, so that every syntax is reachable.
var fuzzOptions = Options{
	LinkSpeed: 1e9,
	LoadDist: func(name string) ([]int16, error) {
		if len(name) > 12 || strings.ContainsAny(name, "%0123456789") {
			return nil, fmt.Errorf("no file %s.dist", name)
		}
		t := make([]int16, len(name))
		for i := range name {
			t[i] = int16(name[i]) - 'a'
		}
		return t, nil
	},
}

// roundTrip checks Parse(Format(x)) == x for every x ParseChain returns.
func roundTrip(t *testing.T, s string) {
	t.Helper()
	specs, err := ParseChain(s, fuzzOptions)
	if err != nil {
		// A chain's errors are *Error; a tree's, given as tc lines (tc
		// accepts "c" for "class"), *ScriptError.
		var te *Error
		var se *ScriptError
		if !errors.As(err, &te) && !errors.As(err, &se) {
			t.Fatalf("ParseChain(%q) returned %T, not *Error or *ScriptError: %v", s, err, err)
		}
		return
	}
	out := FormatChain(specs)
	again, err := ParseChain(out, fuzzOptions)
	if err != nil {
		t.Fatalf("ParseChain(%q) = %#v\nprinted %q, which does not parse: %v", s, specs, out, err)
	}
	if !reflect.DeepEqual(again, specs) {
		t.Fatalf("ParseChain(%q)\n   = %#v\nprinted %q\nreads %#v", s, specs, out, again)
	}
}

var roundTripCorpus = []string{
	"netem delay 100ms 10ms 25%",
	"netem delay 1.23456789ms 3.3us 33.3333%",
	"netem delay 0.1ns 0 7",
	"netem delay 10ms 2ms distribution experimental",
	"netem delay 10ms 2ms distribution paretonormal loss state 0.1% 12.5% 3% 95% 0.01%",
	"netem loss state 7% 7%",
	"netem loss state 1% 99% 5%",
	"netem loss gemodel 0.7% 1% 70% 0.07%",
	"netem loss gemodel 0.7% 99.3% 100% 0.07%",
	"netem loss random 33.333333333333333% 66.6666666667% ecn",
	"netem corrupt 0 5% duplicate 0 0.1",
	"netem delay 1s reorder 0.07% 0.29% gap 1",
	"netem delay 1s reorder 0.07% gap 9",
	"netem rate 1.5kbit rate 7mbps 0 0 -1",
	"netem rate 3.3% -20 53 0",
	"netem rate 0 14",
	"netem slot 0 0 packets 1",
	"netem slot 1.5ms 2.25ms bytes 0x10",
	"netem slot distribution pareto 0 1ns packets 2 bytes 1mbit",
	"netem slot distribution custom 5ms 1ms",
	"netem seed 0 limit 0x10",
	"netem limit 1.5k correlation kernel fifo_jitter oldgap",
	"tbf rate 1mbit burst 32kbit latency 400ms",
	"tbf rate 123456789bit burst 1514 latency 12345us peakrate 987654321bit mtu 9000 mpu 64 overhead 65535 linklayer atm",
	"tbf rate 1.5tibit burst 3g latency 1ms",
	"tbf rate 1gibps burst 1k limit 1 mtu 1",
	"pfifo limit 7; bfifo limit 1.5m; pfifo_head_drop; pfifo_fast",
	"codel limit 1 target 1us interval 4294s ce_threshold 1234567us ecn invsqrt exact",
	"fq_codel limit 1 flows 1 quantum 1 target 1 interval 1 ce_threshold 1 memory_limit 1 drop_batch 1 noecn invsqrt exact mem_overhead 1",
	"pie limit 1 target 1 tupdate 1 alpha 32 beta 1 ecn bytemode dq_rate_estimator",
	"fq_pie limit 1 flows 65536 target 1 tupdate 1 alpha 32 beta 1 quantum 1 memory_limit 1 ecn_prob 99 ecn bytemode dq_rate_estimator mem_overhead 1",
	"netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms; fq_pie memory_limit 1.5m",
	"netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms; fq_codel",
	"sfq",
	"sfq limit 3000 depth 64 flows 512 headdrop redflowlimit 100000 min 8000 max 60000 probability 0.2 ecn harddrop",
	"tbf rate 10mbit burst 32k latency 50ms; sfq perturb 0x10 quantum 1.5k divisor 64 redflowlimit 0x20000 avpkt 1500",
}

func TestRoundTripCorpus(t *testing.T) {
	for _, s := range roundTripCorpus {
		if _, err := ParseChain(s, fuzzOptions); err != nil {
			t.Errorf("corpus entry %q does not parse: %v", s, err)
			continue
		}
		roundTrip(t, s)
	}
}

// TestRoundTripRandom builds random option lines from tc's grammar, with
// random numbers in random units, and checks the round trip on every one
// that parses.
func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	num := func() string {
		switch r.IntN(4) {
		case 0:
			return fmt.Sprint(r.IntN(2000))
		case 1:
			return fmt.Sprintf("%.*f", r.IntN(6), r.Float64()*100)
		case 2:
			return fmt.Sprintf("%ge%d", r.Float64()*10, r.IntN(5)-2)
		}
		return fmt.Sprintf("0x%x", r.IntN(4096))
	}
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	timeU := func() string { return num() + pick("ns", "us", "ms", "s", "usec", "MS") }
	aqmT := func() string { return num() + pick("", "us", "ms", "s") }
	pct := func() string { return fmt.Sprintf("%g%s", r.Float64()*100, pick("", "%")) }
	rate := func() string { return num() + pick("", "bit", "kbit", "Mbit", "gibit", "bps", "kbps", "mibps") }
	size := func() string { return num() + pick("", "b", "k", "kb", "m", "kbit", "mbit") }
	clauses := map[string][]func() string{
		"netem": {
			func() string { return "limit " + size() },
			func() string { return "delay " + timeU() + " " + timeU() + " " + pct() },
			func() string { return "delay " + timeU() },
			func() string {
				return "distribution " + pick("normal", "pareto", "uniform", "paretonormal", "experimental")
			},
			func() string { return "loss random " + pct() + " " + pct() },
			func() string { return "loss state " + pct() + " " + pct() + " " + pct() },
			func() string { return "loss gemodel " + pct() + " " + pct() },
			func() string { return "ecn" },
			func() string { return pick("corrupt ", "duplicate ", "reorder ") + pct() + " " + pct() },
			func() string { return "gap " + fmt.Sprint(r.IntN(10)) },
			func() string {
				return "rate " + rate() + " " + fmt.Sprint(r.IntN(100)-50) + " " + fmt.Sprint(r.IntN(100))
			},
			func() string { return "slot " + timeU() + " " + timeU() + " packets " + fmt.Sprint(r.IntN(9)) },
			func() string { return "slot distribution normal " + timeU() + " " + timeU() + " bytes " + size() },
			func() string { return "seed " + fmt.Sprint(r.Uint64()) },
			func() string { return pick("correlation kernel", "correlation correct", "fifo_jitter", "oldgap") },
		},
		"tbf": {
			func() string { return "rate " + rate() },
			func() string { return "burst " + size() },
			func() string { return pick("limit "+size(), "latency "+aqmT()) },
			func() string { return "peakrate " + rate() + " mtu " + size() },
			func() string { return "mpu " + size() + " overhead " + fmt.Sprint(r.IntN(70000)) },
			func() string { return "linklayer " + pick("ethernet", "atm", "adsl") },
		},
		"fq_codel": {
			func() string { return pick("limit ", "flows ", "quantum ", "drop_batch ") + fmt.Sprint(r.IntN(5000)) },
			func() string { return pick("target ", "interval ", "ce_threshold ") + aqmT() },
			func() string { return "memory_limit " + size() },
			func() string { return pick("ecn", "noecn", "invsqrt exact", "invsqrt linux") },
		},
		"fq_pie": {
			func() string {
				return pick("limit ", "flows ", "alpha ", "beta ", "ecn_prob ", "mem_overhead ") + fmt.Sprint(r.IntN(120))
			},
			func() string { return pick("target ", "tupdate ") + aqmT() },
			func() string { return pick("quantum ", "memory_limit ") + size() },
			func() string {
				return pick("ecn", "noecn", "bytemode", "nobytemode", "dq_rate_estimator", "no_dq_rate_estimator")
			},
		},
		"pie": {
			func() string { return pick("limit ", "alpha ", "beta ") + fmt.Sprint(r.IntN(40)) },
			func() string { return pick("target ", "tupdate ") + aqmT() },
			func() string { return pick("ecn", "noecn", "bytemode", "nobytemode", "dq_rate_estimator") },
		},
		"sfq": {
			func() string {
				return pick("limit ", "perturb ", "divisor ", "flows ", "depth ") + fmt.Sprint(r.IntN(2000))
			},
			func() string { return "quantum " + size() },
			func() string {
				return pick("redflowlimit ", "min ", "max ") + fmt.Sprint(r.IntN(200000)) + pick("", " redflowlimit 150000")
			},
			func() string {
				return pick("avpkt "+size(), "burst "+fmt.Sprint(r.IntN(50)), "probability 0."+fmt.Sprint(r.IntN(99)))
			},
			func() string { return pick("headdrop", "ecn", "harddrop") },
		},
	}
	kinds := []string{"netem", "tbf", "fq_codel", "pie", "sfq", "fq_pie"}
	parsed := 0
	for i := 0; i < 10000; i++ {
		kind := kinds[r.IntN(len(kinds))]
		words := []string{kind}
		for n := r.IntN(6); n >= 0; n-- {
			cs := clauses[kind]
			words = append(words, cs[r.IntN(len(cs))]())
		}
		s := strings.Join(words, " ")
		if _, err := ParseChain(s, fuzzOptions); err == nil {
			parsed++
		}
		roundTrip(t, s)
	}
	t.Logf("%d of 10000 random lines parsed", parsed)
	if parsed < 2000 {
		t.Errorf("only %d of 10000 random lines parsed: the generator tests too little", parsed)
	}
}

func FuzzParseChain(f *testing.F) {
	for _, s := range roundTripCorpus {
		f.Add(s)
	}
	for _, s := range []string{
		"tc qdisc add dev eth0 root netem delay 100ms 10ms 25%",
		"tc qdisc add dev eth0 parent 1:1 tbf rate 10mbit buffer 10000 limit 30000",
		"netem gap 5 delay 10ms",
		"netem delay 10ms reorder 100% gap 5",
		"netem loss state 1% 10%",
		"netem loss gemodel 1% 10% 100% 0%",
		"netem rate 5kbit 20 100 5",
		"netem rate 1mbit 0 48 5",
		"netem rate 10mbit 14",
		"tc qdisc add dev eth0 root handle 1: netem \\\n delay 1ms # c\n tc qdisc add dev eth0 parent 1:1 pie",
		"tc c 000", // a tree's line, abbreviated as tc allows: a *ScriptError
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		roundTrip(t, s)
	})
}

func BenchmarkParseChain(b *testing.B) {
	const s = "tc qdisc add dev eth0 root handle 1: netem delay 50ms 5ms 25% loss 1%; tbf rate 10mbit burst 32k latency 50ms; fq_codel"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseChain(s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
