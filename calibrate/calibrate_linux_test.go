package calibrate

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/lab"
)

func TestMain(m *testing.M) { roottest.Main(m, lab.CleanStale) }

// The CI calibration: the kernel's tbf on a forwarding hop against
// wanlab's, on TCP and UDP. Goodput must agree within 0.5 %, the delay
// under load within 5 % and drops within 10 % (or 2√N for TCP's few).
// Another program's load on a 2-core machine can spoil one attempt of
// either side, so a failed attempt is measured again.
func TestTBFAgreesWithKernel(t *testing.T) {
	roottest.NeedRoot(t)
	cfg := Config{Chain: "tbf rate 10mbit burst 32k latency 50ms", Duration: 10 * time.Second, Name: "calt"}
	roottest.Twice(t, "tbf against the kernel", func(r roottest.Reporter) {
		ms, rows, ok := runAndCompare(r, cfg)
		if !ok {
			return
		}
		if len(rows) != 6 {
			r.Errorf("%d rows, want 6 (tcp and udp: goodput, delay, drops)", len(rows))
		}
		for _, row := range rows {
			if row.Kernel == 0 && row.Metric != Drops {
				r.Errorf("%s %s: the kernel side measured nothing", row.Test, row.Metric)
			}
			if !row.Within {
				r.Errorf("%s %s: wanlab %.4g %s, kernel %.4g %s (ratio %.4f)", row.Test, row.Metric, row.Wanlab, row.Unit, row.Kernel, row.Unit, row.Ratio)
			}
		}
		for _, m := range ms {
			if m.Test == UDP && m.Drops < 1000 {
				r.Errorf("%s: a flood at 12 Mbit/s into 10 Mbit/s dropped only %d packets in 10 s", m.Engine, m.Drops)
			}
		}
	})
}

// The CI comparison of a tree (issue 21): htb under a 10 Mbit/s parent,
// three classes of 1, 2 and 3 Mbit/s by DSCP, each allowed to borrow up to
// the parent, pfifo and bfifo leaves, each class flooded at 12 Mbit/s;
// each class's goodput must agree with the kernel's within 1 % and its
// drops within 10 %. A few seconds of traffic: the classes share the
// excess by quantum (1.67, 3.33 and 5 Mbit/s of frames) from the start.
func TestHTBTreeAgreesWithKernel(t *testing.T) {
	roottest.NeedRoot(t)
	script, err := os.ReadFile("../examples/dscp3.sh")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Script: string(script), Duration: 4 * time.Second, Warmup: time.Second, Name: "calh"}
	// Three attempts: under load the kernel's side varies most (its class
	// 1:30 carried 4.78 and 5.07 Mbit/s in two attempts of one CI run,
	// against the 4.86 htb's arithmetic gives).
	roottest.Attempts(t, "an htb tree against the kernel", 3, func(r roottest.Reporter) {
		ms, rows, ok := runAndCompare(r, cfg)
		if !ok {
			return
		}
		if len(rows) != 6 {
			r.Errorf("%d rows, want 6 (goodput and drops of 1:10, 1:20, 1:30)", len(rows))
		}
		for _, row := range rows {
			if row.Kernel == 0 {
				r.Errorf("%s %s: the kernel side measured nothing", row.Metric, row.Class)
			}
			if !row.Within {
				r.Errorf("%s %s: wanlab %.4g %s, kernel %.4g %s (ratio %.4f)", row.Metric, row.Class, row.Wanlab, row.Unit, row.Kernel, row.Unit, row.Ratio)
			}
		}
		// Whatever the engines, the shares are htb's: 1/6, 2/6 and 3/6
		// of the excess on top of each rate, in frames of 1514 bytes
		// for 1472 of payload.
		// DSCP 0 reaches 1:30, the default class, first.
		share := map[string]float64{"1:10": 1e6 + 4e6/6, "1:20": 2e6 + 4e6*2/6, "1:30": 3e6 + 4e6*3/6}
		for _, m := range ms {
			for _, c := range m.Classes {
				want := share[c.Class] * 1472 / 1514
				if math.Abs(c.GoodputBps/want-1) > 0.05 {
					r.Errorf("%s %s: goodput %.3f Mbit/s, want %.3f (htb's share of the excess)", m.Engine, c.Class, c.GoodputBps/1e6, want/1e6)
				}
			}
		}
	})
}

// runAndCompare runs cfg on both engines and compares them, logging the
// progress and the table; ok is false when the run failed.
func runAndCompare(r roottest.Reporter, cfg Config) ([]Measurement, []Row, bool) {
	var log strings.Builder
	ms, err := Run(context.Background(), cfg, &log)
	r.Logf("%s", log.String())
	if err != nil {
		r.Errorf("%v", err)
		return nil, nil, false
	}
	rows := Compare(ms)
	var table strings.Builder
	PrintRows(&table, rows)
	r.Logf("\n%s", table.String())
	return ms, rows, true
}
