package experiment

import (
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary text to Load: it must never panic, every
// failure must be file errors naming the file, and every plan it accepts
// must be whole (each case with its runs, each run with a file name and a
// seed).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{e2Like, sweep, tableSweep, "tests: [{test: ping}]\n",
		"vars:\n  a:\n    - x: {b: \"${c}\", c: \"${b}\"}\npath: {up: \"${b}\"}\ntests: [{test: ping}]\n",
		"a: &x [*x]\n", "tests:\n  - &t {test: ping}\n  - *t\n", "vars: {d: [1ms, 2ms]}\ncases: [{e: 1}]\ntests: [{test: ping}]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Load("f.yaml", []byte(text), LoadOptions{Backend: &fakeBackend{}, Quick: strings.Contains(text, "quick")})
		if err != nil {
			es, ok := AsErrors(err)
			if !ok || len(es) == 0 {
				t.Fatalf("error %T is not file errors: %v", err, err)
			}
			for _, e := range es {
				if e.File != "f.yaml" || e.Msg == "" {
					t.Fatalf("bad error %+v", e)
				}
			}
			return
		}
		for _, c := range p.Cases {
			if len(c.Runs) != p.Tests*p.Repeat {
				t.Fatalf("case %d has %d runs, want %d", c.Number, len(c.Runs), p.Tests*p.Repeat)
			}
			for _, r := range c.Runs {
				if r.File == "" || r.Seed > maxSeed {
					t.Fatalf("run %+v", r)
				}
			}
		}
	})
}
