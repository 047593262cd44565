package testrun

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/lab"
	"wanlab/netns"
	"wanlab/results"
	"wanlab/tcspec"
)

func TestMain(m *testing.M) { roottest.Main(m, lab.CleanStale) }

// short returns options for a test of a few seconds: the load d after a
// lead of 0.4 s, then a tail of 0.4 s.
func short(test string, d time.Duration) Options {
	o := Defaults()
	o.Test = test
	o.Duration, o.Lead, o.Tail = dur(d), dur(400*time.Millisecond), dur(400*time.Millisecond)
	if test == "ping" {
		o.Lead, o.Tail = nil, nil
	}
	return o
}

// runDoc prepares and runs o as root and returns the document; afterwards
// nothing of a path the run built may be left.
func runDoc(t *testing.T, o Options) *results.Document {
	t.Helper()
	roottest.NeedRoot(t)
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	doc, err := Run(context.Background(), s, Info{Argv: []string{"wanlab", "run", "(test)"}, Version: "test"}, Hooks{
		Warnf: func(f string, a ...any) { t.Logf("warning: "+f, a...) },
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s.Mode != ModeLab {
		nothingLeft(t, s.Lab)
	}
	// A busy machine shows in the verdict; say so beside any figure that
	// then fails.
	if rep := routerReport(t, doc); rep.Faithful != nil && !*rep.Faithful {
		for _, d := range rep.Directions {
			for _, c := range d.Verdict.Causes {
				t.Logf("not faithful: %s: %s", d.Name, c.Text)
			}
		}
	}
	return doc
}

// needIperf3 skips the test where iperf3 is not installed.
func needIperf3(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("skipped: iperf3 is not installed (apt-get install -y iperf3)")
	}
}

// nothingLeft checks that the run removed its testbed or veth pair: no
// namespace, no registry record.
func nothingLeft(t *testing.T, name string) {
	t.Helper()
	roottest.NoTestbed(t, name, lab.NamespaceName(name, lab.Client), lab.NamespaceName(name, lab.Server))
	// A dumbbell's other hosts too (wl-NAME-c2, ...).
	all, _ := netns.List()
	for _, ns := range all {
		if strings.HasPrefix(ns, netns.NamespaceName(name, "")) {
			t.Errorf("namespace %s of testbed %s exists", ns, name)
		}
	}
}

// series returns the document's series called name, the flows' own
// series included.
func series(t testing.TB, d *results.Document, name string) *results.Series {
	t.Helper()
	if s := d.FindSeries(name); s != nil {
		return s
	}
	var names []string
	for _, s := range d.Series {
		names = append(names, s.Name)
	}
	t.Fatalf("no series %q (have %s)", name, strings.Join(names, ", "))
	return nil
}

// within reports whether got is within [lo, hi], as a message.
func within(r roottest.Reporter, what string, got, lo, hi float64) {
	if !(got >= lo && got <= hi) {
		r.Errorf("%s = %.4f, want %g to %g", what, got, lo, hi)
	} else {
		r.Logf("%s = %.4f (want %g to %g)", what, got, lo, hi)
	}
}

// routerReport returns the document's router part.
func routerReport(t testing.TB, d *results.Document) results.RouterReport {
	t.Helper()
	if d.Router == nil {
		t.Fatal("the document has no router part")
	}
	return *d.Router
}

// sum adds a series' values over all its samples, lost ones left out.
func sum(s *results.Series) float64 {
	var x float64
	for _, p := range s.Samples {
		if !p.Lost() {
			x += p.V
		}
	}
	return x
}

// median of a series' values inside its window.
func windowValues(s *results.Series) []float64 {
	var v []float64
	for _, p := range s.Samples {
		if p.T > s.Window[0] && p.T <= s.Window[1] && !math.IsNaN(p.V) {
			v = append(v, p.V)
		}
	}
	sort.Float64s(v)
	return v
}

func describe(s *results.Series) string {
	sm := s.Summary
	return fmt.Sprintf("%s: n %d, lost %d, mean %.3f, median %.3f, min %.3f, max %.3f %s", s.Name, sm.N, s.Lost, sm.Mean, sm.Median, sm.Min, sm.Max, s.Unit)
}
