package calibrate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Engine names the two sides of a comparison.
type Engine string

// The engines: Linux's own qdiscs on a forwarding hop, and wanlab's router.
const (
	Kernel Engine = "kernel"
	Wanlab Engine = "wanlab"
)

// Measurement is what one test measured on one engine.
type Measurement struct {
	Engine Engine `json:"engine"`
	Test   Test   `json:"test"`
	// GoodputBps is the TCP payload delivered, in bit/s, over the measured
	// window (the run less its first Warmup), all TCP flows together: the
	// segments each sender saw acknowledged or SACKed times its MSS, so
	// that a loss's hole in the in-order stream at either end of the
	// window does not count.
	GoodputBps float64 `json:"goodput_bps"`
	// DelayMs is the delay under load, in ms: the median RTT of the UDP
	// probes sent beside a TCP flow, or the mean one-way delay of a UDP
	// flood's packets.
	DelayMs float64 `json:"delay_ms"`
	// Drops counts the packets (wire segments) the path's qdiscs dropped
	// over the whole run: the kernel root qdisc's "dropped", which
	// includes its children's, or the drops of wanlab's direction.
	Drops uint64 `json:"drops"`
	// Sent counts the packets the path's root qdisc sent over the run.
	Sent uint64 `json:"sent_packets"`
	// Retransmits is the TCP senders' retransmitted segments (TCP only).
	Retransmits uint64 `json:"retransmits"`
	// Router is wanlab's own delay on the measured direction (wanlab
	// only): where it is large, the machine did not give the router the
	// CPU it needed, and the comparison measures that.
	Router *RouterDelay `json:"router,omitempty"`
	// Classes are the tree test's figures per leaf class; GoodputBps is
	// then their sum.
	Classes []ClassFigures `json:"classes,omitempty"`
}

// RouterDelay is how late wanlab's router was, in ms: its release
// lateness (after the time the link said a packet could leave) and the
// stalls of packets waiting in the TUN ring before the router read them,
// unseen by the qdiscs (a queue in front of them, whose delay no AQM
// counts).
type RouterDelay struct {
	LatenessP50Ms float64 `json:"lateness_p50_ms"`
	LatenessP99Ms float64 `json:"lateness_p99_ms"`
	StallP99Ms    float64 `json:"ring_stall_p99_ms"`
}

// Metric is one compared figure.
type Metric string

// The compared figures and the tolerances the calibration holds wanlab to
// on a token bucket (the CI check): goodput within 0.5 %, the delay under
// load within 5 %, drops within 10 %.
const (
	Goodput Metric = "goodput"
	Delay   Metric = "delay"
	Drops   Metric = "drops"
)

// Tolerance returns the relative error allowed for m. Drops are also
// within tolerance when they differ by no more than two standard
// deviations of a Poisson count of the kernel's size (2√N, see Within):
// a TCP flow that drops 8 packets in 10 s cannot be held to 10 %.
func Tolerance(m Metric) float64 {
	switch m {
	case Goodput:
		return 0.005
	case Delay:
		return 0.05
	}
	return 0.10
}

// Row compares one figure of one test: the kernel's and wanlab's values
// (means over the runs), their ratio and whether it is within Tolerance.
type Row struct {
	Test   Test   `json:"test"`
	Metric Metric `json:"metric"`
	// Class is the tree test's class the figure is of ("" for the
	// others).
	Class  string  `json:"class,omitempty"`
	Unit   string  `json:"unit"`
	Kernel float64 `json:"kernel"`
	Wanlab float64 `json:"wanlab"`
	// KernelSpread and WanlabSpread are max − min over the runs (0 for
	// one run).
	KernelSpread float64 `json:"kernel_spread"`
	WanlabSpread float64 `json:"wanlab_spread"`
	// Ratio is Wanlab/Kernel; 1 when both are 0, +Inf when only the
	// kernel's is.
	Ratio float64 `json:"ratio"`
	// Tolerance is the relative error allowed (Tolerance, or
	// TreeTolerance for a class); Within the verdict.
	Tolerance float64 `json:"tolerance"`
	Within    bool    `json:"within"`
}

// TreeTolerance returns the relative error the calibration allows a
// class's figure in the tree test (the CI check): goodput within 1 %,
// drops within 10 % (or, as Within, 2√N).
func TreeTolerance(m Metric) float64 {
	if m == Goodput {
		return 0.01
	}
	return 0.10
}

// Compare builds the rows of every test found in ms: for each test and
// metric, the means of each engine's runs, their ratio and the verdict.
func Compare(ms []Measurement) []Row {
	var tests []Test
	seen := map[Test]bool{}
	for _, m := range ms {
		if !seen[m.Test] {
			seen[m.Test] = true
			tests = append(tests, m.Test)
		}
	}
	var rows []Row
	for _, t := range tests {
		if t == Tree {
			rows = append(rows, classRows(ms)...)
			continue
		}
		for _, metric := range []struct {
			m    Metric
			unit string
			get  func(Measurement) float64
		}{
			{Goodput, "Mbit/s", func(m Measurement) float64 { return m.GoodputBps / 1e6 }},
			{Delay, "ms", func(m Measurement) float64 { return m.DelayMs }},
			{Drops, "pkt", func(m Measurement) float64 { return float64(m.Drops) }},
		} {
			var k, w []float64
			for _, m := range ms {
				if m.Test != t {
					continue
				}
				if m.Engine == Kernel {
					k = append(k, metric.get(m))
				} else {
					w = append(w, metric.get(m))
				}
			}
			if r, ok := newRow(Row{Test: t, Metric: metric.m, Unit: metric.unit, Tolerance: Tolerance(metric.m)}, k, w); ok {
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// classRows are the tree test's rows: each class's goodput and drops,
// the means of each engine's runs.
func classRows(ms []Measurement) []Row {
	var classes []string
	for _, m := range ms {
		for _, c := range m.Classes {
			if !slices.Contains(classes, c.Class) {
				classes = append(classes, c.Class)
			}
		}
	}
	var rows []Row
	for _, class := range classes {
		for _, metric := range []struct {
			m    Metric
			unit string
			get  func(ClassFigures) float64
		}{
			{Goodput, "Mbit/s", func(c ClassFigures) float64 { return c.GoodputBps / 1e6 }},
			{Drops, "pkt", func(c ClassFigures) float64 { return float64(c.Drops) }},
		} {
			var k, w []float64
			for _, m := range ms {
				for _, c := range m.Classes {
					if m.Test != Tree || c.Class != class {
						continue
					}
					if m.Engine == Kernel {
						k = append(k, metric.get(c))
					} else {
						w = append(w, metric.get(c))
					}
				}
			}
			if r, ok := newRow(Row{Test: Tree, Metric: metric.m, Class: class, Unit: metric.unit, Tolerance: TreeTolerance(metric.m)}, k, w); ok {
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// newRow fills r (its test, metric, unit and tolerance given) with the
// kernel's values k and wanlab's w, one per run: their means, spreads,
// ratio and verdict. ok is false when an engine has none.
func newRow(r Row, k, w []float64) (Row, bool) {
	if len(k) == 0 || len(w) == 0 {
		return r, false
	}
	r.Kernel, r.Wanlab, r.KernelSpread, r.WanlabSpread = mean(k), mean(w), spread(k), spread(w)
	r.Ratio = ratio(r.Wanlab, r.Kernel)
	r.Within = within(r.Metric, r.Tolerance, r.Kernel, r.Wanlab)
	return r, true
}

// Within says whether wanlab's figure w is within tolerance of the
// kernel's k for metric m: |w/k − 1| ≤ Tolerance(m), or for drops
// |w − k| ≤ 2√k.
func Within(m Metric, k, w float64) bool { return within(m, Tolerance(m), k, w) }

func within(m Metric, tol, k, w float64) bool {
	if math.Abs(ratio(w, k)-1) <= tol {
		return true
	}
	return m == Drops && math.Abs(w-k) <= 2*math.Sqrt(k)
}

func ratio(a, b float64) float64 {
	switch {
	case a == 0 && b == 0:
		return 1
	case b == 0:
		return math.Inf(1)
	}
	return a / b
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func spread(xs []float64) float64 {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}

// PrintRows writes the comparison as a table: each figure on both engines
// (with the spread over the runs when there were several), the ratio and
// whether it is within the tolerance.
func PrintRows(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "%-5s %-14s %20s %20s %8s  %s\n", "test", "figure", "kernel", "wanlab", "ratio", "within")
	for _, r := range rows {
		bound := fmt.Sprintf("±%g %%", 100*r.Tolerance)
		if r.Metric == Drops {
			bound += " or 2√N"
		}
		verdict := "yes (" + bound + ")"
		if !r.Within {
			verdict = "NO (" + bound + ")"
		}
		figure := string(r.Metric)
		if r.Class != "" {
			figure += " " + r.Class
		}
		fmt.Fprintf(w, "%-5s %-14s %20s %20s %8.4f  %s\n", r.Test, figure,
			value(r.Kernel, r.KernelSpread, r.Unit), value(r.Wanlab, r.WanlabSpread, r.Unit), r.Ratio, verdict)
	}
}

func value(v, spread float64, unit string) string {
	s := fmt.Sprintf("%.3f", v)
	if unit == "pkt" {
		s = fmt.Sprintf("%.0f", v)
	}
	if spread > 0 {
		s += fmt.Sprintf(" ±%s", strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", spread/2), "0"), "."))
	}
	return s + " " + unit
}

// LateRouter is the release lateness (p99) above which PrintRouter warns
// that wanlab's figures carry the machine's load.
const LateRouter = 1.0 // ms

// PrintRouter writes the worst of wanlab's own delays over the
// measurements, with a warning when the router was late: a figure that
// misses its tolerance then measures the machine, not the emulation.
func PrintRouter(w io.Writer, ms []Measurement) {
	var worst RouterDelay
	seen := false
	for _, m := range ms {
		if r := m.Router; r != nil {
			seen = true
			worst.LatenessP50Ms = max(worst.LatenessP50Ms, r.LatenessP50Ms)
			worst.LatenessP99Ms = max(worst.LatenessP99Ms, r.LatenessP99Ms)
			worst.StallP99Ms = max(worst.StallP99Ms, r.StallP99Ms)
		}
	}
	if !seen {
		return
	}
	fmt.Fprintf(w, "wanlab's router, worst run: release lateness p50 %.3f ms, p99 %.3f ms; ring stalls p99 %.3f ms\n",
		worst.LatenessP50Ms, worst.LatenessP99Ms, worst.StallP99Ms)
	if worst.LatenessP99Ms > LateRouter || worst.StallP99Ms > LateRouter {
		fmt.Fprintf(w, "warning: the router was late by more than %g ms: packets waited where no qdisc counts them (AQMs drop less, delays grow); give it a CPU (fewer other programs, or up --rt-priority) before trusting the comparison\n", LateRouter)
	}
}
