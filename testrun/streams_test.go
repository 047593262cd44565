package testrun

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/catalog"
	"wanlab/internal/outfile"
	"wanlab/results"
	"wanlab/tcspec"
)

// set gives the options key=value through their parsers, as `wanlab run`
// and an experiment file do.
func setOptions(t *testing.T, o *Options, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if err := LookupOption(kv[i]).Set(o, kv[i+1]); err != nil {
			t.Fatalf("%s %q: %v", kv[i], kv[i+1], err)
		}
	}
}

// The per-stream lists split as Flent's token_split does: on "," and
// ";", empty entries dropped, spaces kept; what Flent's shlex would read
// as quoting or a comment, and stream delays that Flent's int() would not
// take, are refused by the option's parser.
func TestStreamOptionParsers(t *testing.T) {
	o := Defaults()
	setOptions(t, &o, "markings", "CS1,,EF;", "labels", ";a; b,c", "stream_delays", "0;5,,10")
	if !slices.Equal(o.Markings, []string{"CS1", "EF"}) || !slices.Equal(o.Labels, []string{"a", " b", "c"}) ||
		!slices.Equal(o.StreamDelays, []time.Duration{0, 5 * time.Second, 10 * time.Second}) {
		t.Errorf("markings %q, labels %q, stream_delays %v", o.Markings, o.Labels, o.StreamDelays)
	}
	if got := LookupOption("stream_delays").Texts(&o); !slices.Equal(got, []string{"0,5,10"}) {
		t.Errorf("stream_delays reads back as %q, want Flent's 0,5,10", got)
	}
	for _, c := range []struct{ key, value, want string }{
		{"stream_delays", "1.5", `--stream-delays "1.5": entry "1.5": give whole seconds (Flent reads each with int()), e.g. 0,5,10`},
		{"stream_delays", "0,-2", `--stream-delays "0,-2": entry "-2": give 0 or more seconds`},
		{"stream_delays", "2s", `--stream-delays "2s": entry "2s": give whole seconds`},
		{"labels", `a,"b`, `--labels "a,\"b": entry "\"b" holds a quote, a backslash or #, which Flent's parser reads as quoting or a comment: drop it`},
		{"ping_labels", "x#1", `--ping-labels "x#1": entry "x#1" holds a quote`},
	} {
		o := Defaults()
		err := LookupOption(c.key).Set(&o, c.value)
		var bad *BadOption
		if !errors.As(err, &bad) || bad.Key != c.key || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %q: %v (key %q); want %q", c.key, c.value, err, keyOf(err), c.want)
		}
	}
	// Only separators: the user asked for something and got nothing.
	o = Defaults()
	setOptions(t, &o, "cc_algos", ",;")
	err := CheckGiven(o, func(f string) bool { return f == "cc-algos" })
	if !IsBadOption(err) || !strings.Contains(err.Error(), "--cc-algos is empty: give a congestion control per stream") {
		t.Errorf("--cc-algos ',;': %v", err)
	}
}

// Prepare hands the per-stream options to the catalog's test, stream i
// taking entry i, and run.options records them under Flent's names as
// Flent's TEST_PARAMETERS take them.
func TestPrepareStreamOptions(t *testing.T) {
	o := Defaults()
	o.Test, o.Streams = "tcp_nup", 3
	setOptions(t, &o, "markings", "CS1;EF", "cc_algos", "reno,cubic", "stream_delays", "0,2")
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := s.Test.Flows
	if len(f) != 3 || f[0].Mark != "CS1" || f[1].Mark != "EF" || f[2].Mark != catalog.BE ||
		f[0].CC != "reno" || f[1].CC != "cubic" || f[2].CC != "" ||
		f[0].Start.Offset != 0 || f[1].Start.Offset != 2*time.Second || f[2].Start != catalog.LoadStart || f[1].Stop != catalog.LoadStop {
		t.Errorf("flows %+v", f)
	}
	m := s.recordedOptions("")
	for k, want := range map[string]string{"markings": "CS1,EF", "cc_algos": "reno,cubic", "stream_delays": "0,2", "streams": "3"} {
		if m[k] != want {
			t.Errorf("run.options[%s] = %q, want %q", k, m[k], want)
		}
	}
	if _, ok := m["labels"]; ok {
		t.Errorf("run.options records labels, which were not given: %v", m)
	}

	o = Defaults()
	o.Test, o.Streams = "rrul_var", 2
	setOptions(t, &o, "labels", "a,b")
	if s, err = Prepare(o, tcspec.Options{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Test.Flows {
		names = append(names, f.Series)
	}
	if want := []string{"TCP upload::a", "TCP download::a", "TCP upload::b", "TCP download::b"}; !slices.Equal(names, want) {
		t.Errorf("rrul_var --labels a,b: series %q, want %q", names, want)
	}
	if got := s.recordedOptions("")["labels"]; got != "a,b" {
		t.Errorf("run.options.labels = %q", got)
	}

	o = Defaults()
	o.Test, o.Servers = "rtt_fair_var_up", 2
	setOptions(t, &o, "ping_labels", "near,far")
	if s, err = Prepare(o, tcspec.Options{}); err != nil {
		t.Fatal(err)
	}
	if p := s.Test.Probes; len(p) != 2 || p[0].Series != "Ping (ms) near s1" || p[1].Series != "Ping (ms) far s2" {
		t.Errorf("rtt_fair_var_up --ping-labels near,far: probes %+v", p)
	}
}

// A per-stream option is refused, naming the fix, for a test that does not
// take it, and for values the run cannot honour.
func TestPrepareStreamRefusals(t *testing.T) {
	for _, c := range []struct {
		name, test string
		kv         []string
		mod        func(o *Options)
		key, want  string
	}{
		{"labels for tcp_nup", "tcp_2up", []string{"labels", "a,b"}, nil, "labels",
			"--labels is Flent's labels, which rrul_var, rtt_fair_var, rtt_fair_var_up, rtt_fair_var_down, rtt_fair_var_mixed take; tcp_2up takes only markings, cc_algos, stream_delays: drop --labels"},
		{"markings for rrul", "rrul", []string{"markings", "EF"}, nil, "markings", "; rrul takes none of Flent's per-stream parameters: drop --markings"},
		{"markings for rtt_fair4be", "rtt_fair4be", []string{"markings", "EF"}, nil, "markings", "; rtt_fair4be sets its own markings, as Flent's test does: drop --markings"},
		{"ping labels for rrul_var", "rrul_var", []string{"ping_labels", "x"}, nil, "ping_labels", "rrul_var takes only markings, cc_algos, stream_delays, labels: drop --ping-labels"},
		{"stream delays for a square wave", "tcp_2up_square", []string{"stream_delays", "1"}, nil, "stream_delays", "drop --stream-delays"},
		{"bad marking", "tcp_nup", []string{"markings", "CS1,XX"}, nil, "markings", `--markings: "XX" is no DSCP name: use BE, CS0-CS7`},
		{"duplicate label", "rrul_var", []string{"labels", "a,a"}, nil, "labels", `--labels: "a" names two streams: give each stream a label of its own`},
		{"delay as long as the load", "tcp_nup", []string{"stream_delays", "0,10"}, func(o *Options) { o.Duration = dur(10 * time.Second) }, "stream_delays",
			"--stream-delays: a stream 10s after the load's start has no time in the load (--duration 10s) before it stops: give delays shorter than the load, or lengthen --duration"},
		{"delay off the grid", "tcp_nup", []string{"stream_delays", "1"}, func(o *Options) {
			o.Step = 300 * time.Millisecond
			o.Duration, o.Lead, o.Tail = dur(3*time.Second), dur(3*time.Second), dur(3*time.Second)
		}, "stream_delays",
			"--stream-delays: 1s is not a whole number of steps (--step 300ms)"},
		{"cc the kernel lacks", "tcp_4down", []string{"cc_algos", "cubic,nosuchcc"}, nil, "cc_algos",
			"--cc-algos nosuchcc: congestion control nosuchcc is not loaded"},
		{"cc_algos under --cc", "tcp_nup", []string{"cc_algos", "reno"}, func(o *Options) { o.CC = "up=cubic" }, "cc_algos",
			"--cc up=cubic sets the congestion control of every up flow, over --cc-algos reno: drop one of them"},
	} {
		o := Defaults()
		o.Test = c.test
		setOptions(t, &o, c.kv...)
		if c.mod != nil {
			c.mod(&o)
		}
		_, err := Prepare(o, tcspec.Options{})
		var bad *BadOption
		if !errors.As(err, &bad) || bad.Key != c.key || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (key %q); want %q from %s", c.name, err, keyOf(err), c.want, c.key)
		}
	}
	// --cc of the other direction leaves the streams' own.
	o := Defaults()
	o.Test, o.CC = "tcp_nup", "down=cubic"
	setOptions(t, &o, "cc_algos", "reno")
	if _, err := Prepare(o, tcspec.Options{}); err == nil || !strings.Contains(err.Error(), "no TCP flow whose data goes down") {
		t.Errorf("tcp_nup --cc down=cubic --cc-algos reno: %v; want --cc's own refusal of a direction without flows", err)
	}
}

// TestFlentReadsStreamOptions: a run's per-stream options reach the Flent
// export's TEST_PARAMETERS under Flent's names, through run.options as
// Prepare records them, and the installed Flent, rebuilding the test's
// series from them, finds every series of the file: tcp_nup's streams
// with their markings, congestion controls and delays, rrul_var's named
// by their labels.
func TestFlentReadsStreamOptions(t *testing.T) {
	if _, err := exec.LookPath("flent"); err != nil {
		t.Skip("skipped: flent is not installed (apt-get install -y flent)")
	}
	if raceEnabled {
		t.Skip("skipped under the race detector: it runs flent on files, and no code of ours concurrently")
	}
	for _, c := range []struct {
		test    string
		streams int
		kv      []string
		series  []string // that Flent must print
	}{
		{"tcp_nup", 3, []string{"markings", "CS1,EF", "cc_algos", "reno;cubic", "stream_delays", "0,1"},
			[]string{"TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload sum"}},
		{"rrul_var", 2, []string{"labels", "a,b", "markings", "EF", "cc_algos", "reno,cubic"},
			[]string{"TCP upload::a", "TCP download::b", "Ping (ms)::UDP a", "Ping (ms)::UDP b"}},
	} {
		t.Run(c.test, func(t *testing.T) {
			t.Parallel()
			o := Defaults()
			o.Test, o.Streams = c.test, c.streams
			setOptions(t, &o, c.kv...)
			s, err := Prepare(o, tcspec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := synthRun(t, c.test, catalog.Options{Streams: c.streams, PerStream: catalog.PerStream{
				Markings: o.Markings, CCAlgos: o.CCAlgos, Delays: o.StreamDelays, Labels: o.Labels}})
			d.Run.Options = s.recordedOptions("")
			file := filepath.Join(t.TempDir(), c.test+".flent.gz")
			if err := results.WriteFlentFile(context.Background(), file, d, outfile.Options{}); err != nil {
				t.Fatal(err)
			}
			meta, _ := flentFile(t, file)
			params, _ := meta["TEST_PARAMETERS"].(map[string]any)
			for i := 0; i < len(c.kv); i += 2 {
				if want := LookupOption(c.kv[i]).Texts(&o)[0]; params[c.kv[i]] != want {
					t.Errorf("TEST_PARAMETERS[%s] = %v, want %q", c.kv[i], params[c.kv[i]], want)
				}
			}
			blocks := flentRead(t, file)
			if len(blocks) != len(d.Series) {
				t.Errorf("flent prints %d series, the run has %d", len(blocks), len(d.Series))
			}
			for _, name := range c.series {
				if b := blocks[name]; b == nil || b.noData {
					t.Errorf("%s: flent prints no data (%+v)", name, b)
				}
			}
			for i := range d.Series {
				s := &d.Series[i]
				// A series that Flent's test, rebuilt from the
				// parameters, does not define prints without a unit.
				if b := blocks[s.Name]; b == nil || b.points != s.Summary.N || b.unit != s.Unit && !strings.HasSuffix(s.Name, " fairness") {
					t.Errorf("%s: flent prints %+v; the run has %d points in %s", s.Name, b, s.Summary.N, s.Unit)
				}
			}
		})
	}
}
