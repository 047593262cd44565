package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"wanlab/catalog"
	"wanlab/internal/outfile"
	"wanlab/results"
)

// fakeBackend stands in for `wanlab run` where the orchestration is what a
// test checks (parsing, resume, shards, merge, tables): it validates a few
// options the way the real command does and writes a real results
// document whose throughput is a function of the case's variables and the
// run's seed, so that tables and merges have something to compare.
type fakeBackend struct {
	mu sync.Mutex
	// ran lists the results files written, in order.
	ran []string
	// cancelAfter cancels the experiment's context from inside the n-th
	// run (counting from 1), as a SIGINT would: that run is written
	// partial. 0 never cancels.
	cancelAfter int
	cancel      context.CancelFunc
	// failTests makes runs of these tests fail without a results file.
	failTests map[string]bool
	// onRun, when set, is called as each run starts.
	onRun func(r *Run)
	// partial, when set, gives the reason a run ends early ("" for
	// none): its results are written, marked partial with it.
	partial func(r *Run) string
	// edit, when set, changes each run's document before it is written.
	edit func(r *Run, d *results.Document)
}

func (b *fakeBackend) Keys() []string {
	return []string{"duration", "cc", "sysctl", "title", "direct", "udp_rate", "step"}
}

func (b *fakeBackend) Check(r *Run) error {
	known := false
	for _, n := range catalog.Names() {
		known = known || n == r.Test
	}
	if !known {
		return fmt.Errorf("test %q is unknown: use one of %s", r.Test, strings.Join(catalog.Names(), ", "))
	}
	if v, ok := r.Option("duration"); ok {
		if len(v) != 1 {
			return &OptionError{"duration", errors.New("takes one value")}
		}
		if d, err := time.ParseDuration(v[0]); err != nil || d <= 0 {
			return &OptionError{"duration", fmt.Errorf("%q is not a positive duration: write e.g. 20s", v[0])}
		}
	}
	if v, ok := r.Option("cc"); ok {
		if len(v) != 1 || (v[0] != "reno" && v[0] != "cubic" && v[0] != "bbr") {
			return &OptionError{"cc", fmt.Errorf("%q is not a congestion control: use reno, cubic or bbr", strings.Join(v, ","))}
		}
	}
	return nil
}

func (b *fakeBackend) Estimate(r *Run) time.Duration { return 3 * time.Second }

func (b *fakeBackend) Run(ctx context.Context, r *Run, path string) error {
	b.mu.Lock()
	b.ran = append(b.ran, r.File)
	n := len(b.ran)
	b.mu.Unlock()
	if b.onRun != nil {
		b.onRun(r)
	}
	if b.failTests[r.Test] {
		return errors.New("the testbed could not be built")
	}
	if b.cancelAfter > 0 && n == b.cancelAfter {
		b.cancel()
	}
	doc := fakeDoc(r)
	if b.edit != nil {
		b.edit(r, doc)
	}
	if b.partial != nil {
		if why := b.partial(r); why != "" {
			doc.Run.Partial, doc.Run.PartialReason = true, why
		}
	}
	if ctx.Err() != nil {
		doc.Run.Partial, doc.Run.PartialReason = true, "interrupted"
	}
	if err := results.WriteFile(context.Background(), path, doc, outfile.Options{}); err != nil {
		return err
	}
	return ctx.Err()
}

// fakeDoc is a results document for r: the test's load series at a rate
// that falls with the case's "delay" variable, with noise drawn from the
// run's seed, summarised as `wanlab run` summarises.
func fakeDoc(r *Run) *results.Document {
	rng := rand.New(rand.NewPCG(r.Seed, 1))
	rate := 90.0
	if d, ok := r.Case.Value("delay"); ok {
		if dd, err := time.ParseDuration(d); err == nil {
			rate = 90 / (1 + dd.Seconds()*20)
		}
	}
	if cc, ok := r.Option("cc"); ok && cc[0] == "reno" {
		rate *= 0.9
	}
	doc := &results.Document{Run: results.Run{
		WanlabVersion: "test", Argv: []string{"wanlab", "run", r.Test}, Test: r.Test, Title: r.Title,
		Start:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		DurationS: 2, StepS: 0.2, Seed: r.Seed, Framing: "ethernet",
		Path: results.Path{Up: r.Case.UpTC, Down: r.Case.DownTC},
	}}
	names := map[string][]string{
		"tcp_upload": {"TCP upload"}, "tcp_download": {"TCP download"}, "udp_flood": {"UDP upload"},
		"tcp_bidirectional": {"TCP download", "TCP upload"}, "ping": nil,
		"rrul": {"TCP download", "TCP upload"},
	}[r.Test]
	for i, name := range names {
		s := results.Series{Name: name, Unit: "Mbits/s", Window: [2]float64{0, 2}}
		for k := 1; k <= 10; k++ {
			s.Samples = append(s.Samples, results.Sample{T: float64(k) * 0.2, V: math.Round((rate+rng.NormFloat64())*1000) / 1000})
		}
		doc.Series = append(doc.Series, s)
		// A flow's own series, as TCP_INFO gives them: the reordering
		// the sender has seen rises by one each step.
		own := results.Series{Name: name + "::tcp_reordering", Unit: "packets", Window: [2]float64{0, 2}}
		for k := 1; k <= 10; k++ {
			own.Samples = append(own.Samples, results.Sample{T: float64(k) * 0.2, V: float64(k)})
		}
		doc.Flows = append(doc.Flows, results.Flow{ID: i + 1, Label: name, Direction: "up", Protocol: "tcp", Series: []results.Series{own}})
	}
	if r.Test == "rrul" {
		// rrul's main series: the total of its flows both ways.
		totals := results.Series{Name: "TCP totals", Unit: "Mbits/s", Window: [2]float64{0, 2}}
		for k := range doc.Series[0].Samples {
			totals.Samples = append(totals.Samples, results.Sample{T: doc.Series[0].Samples[k].T, V: doc.Series[0].Samples[k].V + doc.Series[1].Samples[k].V})
		}
		doc.Series = append(doc.Series, totals)
	}
	ping := results.Series{Name: "Ping (ms) ICMP", Unit: "ms", Window: [2]float64{0, 2}}
	for k := 1; k <= 10; k++ {
		ping.Samples = append(ping.Samples, results.Sample{T: float64(k) * 0.2, V: 20 + rng.Float64()})
	}
	doc.Series = append(doc.Series, ping)
	doc.Flows = append(doc.Flows, results.Flow{ID: len(names) + 1, Label: ping.Name, Direction: "both", Protocol: "icmp"})
	doc.Summarize()
	return doc
}
