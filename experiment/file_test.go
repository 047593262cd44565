package experiment

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, text string, quick bool) (*Plan, error) {
	t.Helper()
	return Load("x.yaml", []byte(text), LoadOptions{Backend: &fakeBackend{}, Quick: quick})
}

func mustLoad(t *testing.T, text string, quick bool) *Plan {
	t.Helper()
	p, err := load(t, text, quick)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

// checkHas checks that got, the output named what, holds each of want.
func checkHas(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

const e2Like = `
name: e2-tbf
vars:
  rate: [1mbit, 2mbit, 5mbit, 10mbit]
  cc: [reno, cubic]
path:
  both: "netem delay 20ms; tbf rate ${rate} buffer 10000 limit 30000"
tests:
  - test: tcp_upload
    duration: 60s
    cc: ${cc}
repeat: 3
shuffle: true
pause: 2s
`

func TestLoadGrid(t *testing.T) {
	p := mustLoad(t, e2Like, false)
	if p.Name != "e2-tbf" || len(p.Cases) != 8 || p.Repeat != 3 || !p.Shuffle || p.Pause.Seconds() != 2 {
		t.Fatalf("plan: name %q, %d cases, repeat %d, shuffle %v, pause %v", p.Name, len(p.Cases), p.Repeat, p.Shuffle, p.Pause)
	}
	// The first variable varies slowest.
	want := []string{"rate=1mbit cc=reno", "rate=1mbit cc=cubic", "rate=2mbit cc=reno"}
	for i, w := range want {
		if got := p.Cases[i].Label(); got != w {
			t.Errorf("case %d: %q, want %q", i+1, got, w)
		}
	}
	c := p.Cases[2]
	if c.UpTC != "netem limit 1000 delay 20ms; tbf rate 2Mbit burst 10000b limit 30000b" && !strings.Contains(c.UpTC, "tbf rate 2Mbit") {
		t.Errorf("up chain in tc syntax: %q", c.UpTC)
	}
	if c.Up != "netem delay 20ms; tbf rate 2mbit buffer 10000 limit 30000" || c.Down != c.Up {
		t.Errorf("chains as written: up %q, down %q", c.Up, c.Down)
	}
	r := c.Runs[0]
	if cc, _ := r.Option("cc"); r.Test != "tcp_upload" || len(cc) != 1 || cc[0] != "reno" {
		t.Errorf("run options: %s %+v", r.Test, r.Options)
	}
	if len(c.Runs) != 3 || r.File != "c003-tcp_upload-r1.json.gz" {
		t.Errorf("%d runs, first file %q", len(c.Runs), r.File)
	}
	// Seeds differ between runs and do not depend on the case's position.
	seeds := map[uint64]bool{}
	for _, c := range p.Cases {
		for _, r := range c.Runs {
			if seeds[r.Seed] {
				t.Fatalf("seed %d used twice", r.Seed)
			}
			seeds[r.Seed] = true
		}
	}
	reordered := strings.Replace(e2Like, "[1mbit, 2mbit, 5mbit, 10mbit]", "[10mbit, 2mbit]", 1)
	q := mustLoad(t, reordered, false)
	if q.Cases[2].Label() != "rate=2mbit cc=reno" || q.Cases[2].Runs[1].Seed != p.Cases[2].Runs[1].Seed {
		t.Errorf("the seed of rate=2mbit cc=reno #2 changed with its position: %d vs %d", q.Cases[2].Runs[1].Seed, p.Cases[2].Runs[1].Seed)
	}
	seeded := mustLoad(t, e2Like+"seed: 2\n", false)
	if seeded.Cases[0].Runs[0].Seed == p.Cases[0].Runs[0].Seed {
		t.Error("the file's seed does not change the runs' seeds")
	}
}

func TestLoadCasesBindingsExcludeQuick(t *testing.T) {
	text := `
name: e1-like
cases:
  - delay:
      - 10ms: {jitter: 1ms}
      - 30ms: {jitter: 3ms}
    variant:
      - fixed: {netem: "netem delay ${delay}"}
      - jitter: {netem: "netem delay ${delay} ${jitter} 25%"}
  - {delay: direct, variant: {direct: {netem: ""}}}
vars:
  transport:
    - udp: {test: udp_flood, cc: cubic}
    - reno: {test: tcp_upload, cc: reno}
exclude:
  - {variant: jitter, transport: udp}
quick:
  variant: [fixed, direct]
path:
  up: "${netem}"
tests:
  - test: ${test}
    cc: ${cc}
`
	p := mustLoad(t, text, false)
	var labels []string
	for _, c := range p.Cases {
		labels = append(labels, c.Label())
	}
	want := []string{
		"delay=10ms variant=fixed transport=udp", "delay=10ms variant=fixed transport=reno",
		"delay=10ms variant=jitter transport=reno",
		"delay=30ms variant=fixed transport=udp", "delay=30ms variant=fixed transport=reno",
		"delay=30ms variant=jitter transport=reno",
		"delay=direct variant=direct transport=udp", "delay=direct variant=direct transport=reno",
	}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Fatalf("cases:\n%s\nwant:\n%s", strings.Join(labels, "\n"), strings.Join(want, "\n"))
	}
	c := p.Cases[2]
	if c.Up != "netem delay 10ms 1ms 25%" || c.Runs[0].Test != "tcp_upload" {
		t.Errorf("case 3: up %q, test %q", c.Up, c.Runs[0].Test)
	}
	if j, _ := c.Value("jitter"); j != "1ms" {
		t.Errorf("bound jitter = %q", j)
	}
	if d := p.Cases[6]; d.Up != "" || d.UpTC != "" || d.Runs[0].Test != "udp_flood" {
		t.Errorf("direct case: up %q test %q", d.Up, d.Runs[0].Test)
	}
	q := mustLoad(t, text, true)
	if len(q.Cases) != 6 || q.Repeat != 1 || !q.Cases[0].Runs[0].Quick {
		t.Errorf("quick: %d cases (want 6), repeat %d", len(q.Cases), q.Repeat)
	}
	// A quick case has the same seed as in the full plan.
	if q.Cases[0].Runs[0].Seed != p.Cases[0].Runs[0].Seed {
		t.Error("quick changes the seeds")
	}
}

// TestLoadErrors is the table of malformed files: each must fail at load
// with the file, the line and the fix.
func TestLoadErrors(t *testing.T) {
	base := "vars:\n  delay: [10ms, 30ms]\npath:\n  up: \"netem delay ${delay}\"\ntests:\n  - test: tcp_upload\n    duration: 10s\n"
	cases := []struct {
		name, text string
		want       []string // substrings of the message, the first being FILE:LINE
	}{
		{"bad yaml", "vars:\n  delay: [10ms, 30ms\npath: x\n", []string{"x.yaml:", "not valid YAML"}},
		{"tab yaml", "name: a\n\tvars: b\n", []string{"x.yaml:2:", "not valid YAML"}},
		{"not a mapping", "- a\n- b\n", []string{"x.yaml:1:", "mapping of keys"}},
		{"empty", "", []string{"x.yaml:", "empty"}},
		{"unknown top key", base + "repaet: 3\n", []string{"x.yaml:8:", `unknown key "repaet"`, `did you mean "repeat"`}},
		{"option at top", base + "duration: 3s\n", []string{"x.yaml:8:", "run option", "tests:"}},
		{"unknown option", strings.Replace(base, "duration: 10s", "duratoin: 10s", 1), []string{"x.yaml:7:", `"duratoin"`, `did you mean "duration"`}},
		{"reserved seed", base + "    seed: 4\n", []string{"x.yaml:8:", "seed", "top of the file"}},
		{"path in test", base + "    up: netem delay 1ms\n", []string{"x.yaml:8:", "path:"}},
		{"undefined var", strings.Replace(base, "${delay}", "${dealy}", 1), []string{"x.yaml:4:", "${dealy} is not defined", "did you mean ${delay}"}},
		{"undefined var in option", base + "    cc: ${ccc}\n", []string{"x.yaml:8:", "${ccc} is not defined"}},
		{"bare dollar", strings.Replace(base, "${delay}", "$delay", 1), []string{"x.yaml:4:", "${delay}"}},
		{"tc refuses", strings.Replace(base, "10ms, 30ms", "10ms, 30mz", 1), []string{"x.yaml:4:", "path up: netem:", "30mz", "${delay} from line 2"}},
		{"tc refuses fixed", strings.Replace(base, "netem delay ${delay}", "netem dealy ${delay}", 1), []string{"x.yaml:4:", "path up: netem: \"dealy\" is not a netem option", "and 1 more"}},
		{"bad option value", strings.Replace(base, "duration: 10s", "duration: ten", 1), []string{"x.yaml:7:", "duration", "20s"}},
		{"unknown test", strings.Replace(base, "tcp_upload", "tcp_uplaod", 1), []string{"x.yaml:6:", "tcp_uplaod"}},
		{"no tests", "vars:\n  a: [1]\n", []string{"x.yaml:", "no `tests:`"}},
		{"duplicate key", base + "repeat: 2\nrepeat: 3\n", []string{"x.yaml:9:", `"repeat" already defined at [8:1]`, "keep one"}},
		{"bad repeat", base + "repeat: 0\n", []string{"x.yaml:8:", "repeat", "1 to"}},
		{"bad pause", base + "pause: soon\n", []string{"x.yaml:8:", "pause", "2s"}},
		{"bad shuffle", base + "shuffle: maybe\n", []string{"x.yaml:8:", "true or false"}},
		{"both and up", "path:\n  up: netem\n  both: netem\ntests: [{test: ping}]\n", []string{"x.yaml:3:", "either both"}},
		{"unknown path key", "path:\n  upp: netem\ntests: [{test: ping}]\n", []string{"x.yaml:2:", `did you mean "up"`}},
		{"duplicate value", "vars:\n  a: [1, 2, 1]\ntests: [{test: ping}]\n", []string{"x.yaml:2:", "twice"}},
		{"exclude typo", base + "exclude: [{delay: 20ms}]\n", []string{"x.yaml:8:", `no value "20ms"`}},
		{"exclude all", base + "exclude: [{delay: [10ms, 30ms]}]\n", []string{"x.yaml:8:", "no case is left"}},
		{"quick unknown var", base + "quick: {dly: [10ms]}\n", []string{"x.yaml:8:", "did you mean delay"}},
		{"cases differ", "cases:\n  - {a: 1}\n  - {b: 2}\ntests: [{test: ping}]\n", []string{"x.yaml:3:", "same variables"}},
		{"var in both", "cases:\n  - {a: 1}\nvars:\n  a: [2]\ntests: [{test: ping}]\n", []string{"x.yaml:2:", "in one place"}},
		{"bound cycle", "vars:\n  a:\n    - x: {b: \"${c}\", c: \"${b}\"}\npath: {up: \"${b}\"}\ntests: [{test: ping}]\n", []string{"x.yaml:3:", "cycle"}},
		{"bound missing in one case", "vars:\n  a:\n    - x: {d: 1ms}\n    - y\npath: {up: \"netem delay ${d}\"}\ntests: [{test: ping}]\n", []string{"x.yaml:5:", "not defined in this case", "a=y"}},
		{"label with var", "vars:\n  a: [\"${b}\"]\ntests: [{test: ping}]\n", []string{"x.yaml:2:", "bind a further variable"}},
		{"merge key", "base: &b {test: ping}\ntests: [{<<: *b}]\n", []string{"x.yaml:1:", "unknown key"}},
		{"mapping option", base + "    cc: {a: b}\n", []string{"x.yaml:8:", "option cc"}},
		{"test missing", "tests:\n  - duration: 3s\n", []string{"x.yaml:2:", "test: NAME"}},
		{"two documents", base + "---\nname: b\n", []string{"x.yaml:9:", "second YAML document"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.text, true)
			if err == nil {
				t.Fatalf("no error for:\n%s", c.text)
			}
			if _, ok := AsErrors(err); !ok {
				t.Fatalf("error %T is not a file error: %v", err, err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !strings.HasPrefix(msg, c.want[0]) {
				t.Errorf("message %q does not start with %q", msg, c.want[0])
			}
		})
	}
}

func TestLoadAliases(t *testing.T) {
	p := mustLoad(t, `
tests:
  - &up {test: tcp_upload, duration: 5s}
  - *up
`, false)
	if len(p.Cases) != 1 || len(p.Cases[0].Runs) != 2 || p.Cases[0].Runs[1].Test != "tcp_upload" {
		t.Fatalf("aliased test entry: %+v", p.Cases[0].Runs)
	}
	if p.Cases[0].Runs[1].File != "c001-t2-tcp_upload-r1.json.gz" {
		t.Errorf("second entry's file %q", p.Cases[0].Runs[1].File)
	}
}

// TestLoadRefusesHugeGrid: the runs are counted from the grid's sizes
// before any case is made, and a file that asks for more than maxRuns is
// refused at once, naming the count and the bound (issue 26 item 3: 2 ×
// 1000 values took 1.9 GB and a minute without a word).
func TestLoadRefusesHugeGrid(t *testing.T) {
	values := func(prefix string, n int) string {
		var vs []string
		for i := range n {
			vs = append(vs, fmt.Sprintf("%s%d", prefix, i))
		}
		return "[" + strings.Join(vs, ", ") + "]"
	}
	for _, c := range []struct {
		name, text string
		quick      bool
		want       string // "" when the file is within the bound
	}{
		{"400 × 400", "vars:\n  a: " + values("a", 400) + "\n  b: " + values("b", 400) + "\ntests: [{test: ping}]\n", false,
			"x.yaml: the file asks for 160000 runs (160000 cases × 1 test × 1 repetition), more than the 100000"},
		{"1000 × 1000 × 1000", "vars:\n  a: " + values("a", 1000) + "\n  b: " + values("b", 1000) + "\n  c: " + values("c", 1000) + "\ntests: [{test: ping}]\n", false,
			"1000000000 runs (1000000000 cases"},
		{"overflow", "vars:\n" + func() string {
			var b strings.Builder
			for i := range 12 {
				fmt.Fprintf(&b, "  v%d: %s\n", i, values("x", 100))
			}
			return b.String()
		}() + "tests: [{test: ping}, {test: ping}]\nrepeat: 1000\n", false, "more than 4611686018427387904 runs"},
		{"repeat", "vars:\n  a: " + values("a", 101) + "\ntests: [{test: ping}]\nrepeat: 1000\n", false, "101000 runs (101 cases × 1 test × 1000 repetitions)"},
		{"cases entries add up", "cases:\n  - {a: " + values("a", 250) + ", b: " + values("b", 200) + "}\n  - {a: " + values("c", 250) + ", b: " + values("d", 201) + "}\ntests: [{test: ping}]\n", false,
			"100250 runs (100250 cases"},
		{"exclude is an upper bound", "vars:\n  a: " + values("a", 400) + "\n  b: " + values("b", 400) + "\nexclude: [{a: a1}]\ntests: [{test: ping}]\n", false,
			"up to 160000 runs (160000 cases × 1 test × 1 repetition), before exclude"},
		{"quick counts its selection", "vars:\n  a: " + values("a", 400) + "\n  b: " + values("b", 400) + "\nquick: {a: [a1, a2]}\ntests: [{test: ping}]\nrepeat: 3\n", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := load(t, c.text, c.quick)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Load took %v", took)
			}
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v; want one containing %q", err, c.want)
			}
		})
	}
}
