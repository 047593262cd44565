package results

import (
	"strings"
	"testing"

	"wanlab/fidelity"
	"wanlab/internal/schematest"
)

// sampleRouter is a router report with every key present: a direction
// that is not faithful, a timed change, steps and a note.
func sampleRouter() *RouterReport {
	faithful := false
	d12 := 12.0
	return &RouterReport{
		Mode: RouterLab, Testbed: "wl-lab", Faithful: &faithful,
		Directions: []DirectionReport{{
			Name: "up", ChainStart: "tbf rate 10mbit burst 32k latency 50ms", ChainEnd: "",
			ConfiguredRateBps: 9_000_000, LoadRateBps: 8.5e6,
			Sent: 1000, BytesIn: 1_500_000, Delivered: 990, BytesOut: 1_485_000, Dropped: 10,
			DroppedByReason: map[string]uint64{"loss": 6, "limit": 4}, Marked: 2, Reordered: 1,
			Delay:            DelayReport{N: 990, MeanMs: 12.5, MinMs: 1, P50Ms: 12, P99Ms: 30, MaxMs: 31.25},
			Lateness:         LatenessReport{N: 990, P50Ns: 2000, P99Ns: 1_500_000, MaxNs: 3_000_000},
			PercentilesSince: "testbed", LoopBusy: 0.2, LoopHeld: 0.05,
			Verdict: fidelity.Verdict{Direction: "up", ToleranceNs: 1_000_000,
				Causes: []fidelity.Cause{{Code: "late_releases", Text: "late"}}},
		}},
		Changes: []AppliedChange{{AtS: 1, AppliedS: 1.002, Direction: "up", Chain: "", Effect: "1 tbf: removed"},
			{AtS: 2, AppliedS: 2, Direction: "down", Chain: "netem delay 1ms", Error: "refused"}},
		Steps: &RouterSteps{TS: []float64{0, 0.2},
			Up:   RouterStepsColumns{DeliveredBytes: []uint64{0, 100}, Dropped: []uint64{0, 1}, Marked: []uint64{0, 0}, DelayMeanMs: []*float64{nil, &d12}, Queued: []uint64{0, 3}},
			Down: RouterStepsColumns{DeliveredBytes: []uint64{0, 0}, Dropped: []uint64{0, 0}, Marked: []uint64{0, 0}, DelayMeanMs: []*float64{nil, nil}, Queued: []uint64{0, 0}}},
		Note: "a note",
	}
}

// Every key of the router report is snake_case and documented.
func TestRouterReportKeys(t *testing.T) {
	schematest.CheckKeys(t, sampleRouter())
}

// A run without a router, or without readings of it, says so in a line.
func TestWriteRouterWithoutReadings(t *testing.T) {
	for _, c := range []struct {
		rep  RouterReport
		want string
	}{
		{RouterReport{Mode: RouterDirect, Testbed: "x", Note: "a veth pair"}, "\nRouter: none (a veth pair)\n"},
		{RouterReport{Mode: RouterTestbed, Testbed: "x", Note: "reading the router failed: gone"}, "\nRouter: no readings (reading the router failed: gone)\n"},
	} {
		var b strings.Builder
		if err := WriteSummary(&b, &Document{Router: &c.rep}, false); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), c.want) {
			t.Errorf("%s: the summary ends\n%s\nwant %q", c.rep.Mode, b.String(), c.want)
		}
	}
}
