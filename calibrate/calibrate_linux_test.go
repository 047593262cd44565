package calibrate

import (
	"context"
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
		var log strings.Builder
		ms, err := Run(context.Background(), cfg, &log)
		r.Logf("%s", log.String())
		if err != nil {
			r.Errorf("%v", err)
			return
		}
		rows := Compare(ms)
		if len(rows) != 6 {
			r.Errorf("%d rows, want 6 (tcp and udp: goodput, delay, drops)", len(rows))
		}
		var table strings.Builder
		PrintRows(&table, rows)
		r.Logf("\n%s", table.String())
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
