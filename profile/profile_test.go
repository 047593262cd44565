package profile

import (
	"slices"
	"strings"
	"testing"

	"wanlab/qdisc"
	"wanlab/tcspec"
)

// TestProfilesHaveTheirShape checks that every profile parses and has the
// shape WithAQM relies on: netem (the delay) as the root, a tbf, and a FIFO
// as the tbf's child.
func TestProfilesHaveTheirShape(t *testing.T) {
	if len(All()) < 4 {
		t.Fatalf("want at least 4 profiles, have %v", Names())
	}
	for _, p := range All() {
		up, down, err := p.Chains(tcspec.Options{})
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for dir, chain := range map[string][]qdisc.Spec{"up": up, "down": down} {
			if len(chain) != 3 || chain[0].Kind() != "netem" || chain[1].Kind() != "tbf" || chain[2].Kind() != "pfifo" {
				t.Errorf("%s %s: %s is not netem; tbf; pfifo", p.Name, dir, tcspec.FormatChain(chain))
				continue
			}
			n := chain[0].(qdisc.NetemConfig)
			if n.Delay <= 0 || n.Limit < 10000 {
				t.Errorf("%s %s: netem delay %v limit %d: want a delay and a limit that never binds", p.Name, dir, n.Delay, n.Limit)
			}
			if p.Summary == "" || p.Why == "" {
				t.Errorf("%s: undocumented", p.Name)
			}
		}
	}
}

// TestHomeIsAsymmetric pins the default profile's rates and delay, which
// the README and `wanlab run` with no arguments describe.
func TestHomeIsAsymmetric(t *testing.T) {
	p, err := Lookup("home")
	if err != nil {
		t.Fatal(err)
	}
	up, down, err := p.Chains(tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := up[1].(qdisc.TBFConfig).Rate.BitsPerSecond(); r != 5e6 {
		t.Errorf("home up rate %d, want 5 Mbit/s", r)
	}
	if r := down[1].(qdisc.TBFConfig).Rate.BitsPerSecond(); r != 20e6 {
		t.Errorf("home down rate %d, want 20 Mbit/s", r)
	}
	if d := up[0].(qdisc.NetemConfig).Delay; d.Milliseconds() != 20 {
		t.Errorf("home delay %v, want 20ms", d)
	}
}

func TestWithAQM(t *testing.T) {
	for _, p := range All() {
		up, _, err := p.Chains(tcspec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, aqm := range AQMs {
			got, err := WithAQM(up, aqm)
			if err != nil {
				t.Fatalf("%s with %s: %v", p.Name, aqm, err)
			}
			switch {
			case slices.Contains(shapers, aqm):
				// cake takes the tbf's place, at its rate.
				if len(got) != 2 || got[0].Kind() != "netem" || got[1].Kind() != aqm || shaperRate(got[1]) != up[1].(qdisc.TBFConfig).Rate {
					t.Errorf("%s with %s: %s", p.Name, aqm, tcspec.FormatChain(got))
				}
			case len(got) != 3 || got[0].Kind() != "netem" || got[1].Kind() != "tbf" || got[2].Kind() != aqm:
				t.Errorf("%s with %s: %s", p.Name, aqm, tcspec.FormatChain(got))
			}
			if up[2].Kind() != "pfifo" {
				t.Fatalf("WithAQM changed its input: %s", tcspec.FormatChain(up))
			}
		}
	}
	// A tbf without an explicit child gets the AQM as its child.
	chain, err := tcspec.ParseChain("netem delay 10ms; tbf rate 1mbit burst 10k latency 50ms", tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := WithAQM(chain, "fq_codel")
	if err != nil || len(got) != 3 || got[2].Kind() != "fq_codel" {
		t.Errorf("WithAQM on a bare tbf: %v, %v", tcspec.FormatChain(got), err)
	}
}

func TestErrorsNameTheFix(t *testing.T) {
	if _, err := Lookup("dsl"); err == nil || !strings.Contains(err.Error(), "home") {
		t.Errorf("Lookup(dsl): %v: want the list of profiles", err)
	}
	chain, _ := tcspec.ParseChain("netem delay 10ms", tcspec.Options{})
	if _, err := WithAQM(chain, "fq_codel"); err == nil || !strings.Contains(err.Error(), "needs a tbf") {
		t.Errorf("WithAQM without tbf: %v", err)
	}
	if _, err := WithAQM(chain, "red"); err == nil || !strings.Contains(err.Error(), "fq_codel") {
		t.Errorf("WithAQM(red): %v", err)
	}
}

// shaperRate is the rate a shaping AQM shapes at.
func shaperRate(s qdisc.Spec) qdisc.Rate {
	if c, ok := s.(qdisc.CakeConfig); ok {
		return c.Bandwidth
	}
	return 0
}
