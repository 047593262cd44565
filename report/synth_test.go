package report

import (
	"time"

	"wanlab/fidelity"
	"wanlab/internal/resultstest"
	"wanlab/results"
)

// fidelityCase is what a synthetic run's router report says.
type fidelityCase int

const (
	noRouter fidelityCase = iota
	faithfulRun
	lateUp          // the up direction released packets late
	ringDropsDown   // the down direction lost packets in the TUN ring
	directNoVerdict // a run on a veth pair: a router report without a verdict
)

// synthRun builds a run of test on resultstest's default path (10 Mbit/s,
// 40 ms) with a router report per fc.
func synthRun(test, title string, seed uint64, fc fidelityCase) *results.Document {
	d := resultstest.Run(test, title, seed, resultstest.DefaultPath)
	d.Router = synthRouter(fc, resultstest.DefaultPath.Chain())
	return d
}

// synthRouter returns a router report as `wanlab run` makes it: the
// overall verdict, and per direction its chain, counters, delay,
// lateness, ring drops and fidelity.Verdict, made by fidelity.Judge.
func synthRouter(fc fidelityCase, chain string) *results.RouterReport {
	switch fc {
	case noRouter:
		return nil
	case directNoVerdict:
		return &results.RouterReport{Mode: results.RouterDirect, Testbed: "wl-x",
			Note: "the hosts were joined by a plain veth pair: no router, no emulation, no verdict"}
	}
	faithful := true
	rep := &results.RouterReport{Mode: results.RouterTestbed, Testbed: "wl-run-1", Faithful: &faithful}
	for _, name := range []string{"up", "down"} {
		late, ring := 40*time.Microsecond, uint64(0)
		if fc == lateUp && name == "up" {
			late = 3 * time.Millisecond
		}
		if fc == ringDropsDown && name == "down" {
			ring = 17
		}
		v := fidelity.Judge(fidelity.Direction{Name: name, Releases: 9000, LatenessP99: late, RingDrops: ring}, 20*time.Millisecond)
		faithful = faithful && v.Faithful
		rep.Directions = append(rep.Directions, results.DirectionReport{
			Name: name, ChainStart: chain, ChainEnd: chain,
			ConfiguredRateBps: 10_000_000, ConfiguredDelayNs: 20_000_000,
			LoadRateBps: 9_561_000,
			Sent:        10_000, BytesIn: 15_000_000, Delivered: 9_880, BytesOut: 14_820_000,
			Dropped: 120, DroppedByReason: map[string]uint64{"limit": 120},
			Delay:            results.DelayReport{N: 9_880, MeanNs: 48.2e6, MinNs: 20.01e6, P50Ns: 47.5e6, P99Ns: 79.9e6, MaxNs: 81.3e6},
			Lateness:         results.LatenessReport{N: 9_000, P50Ns: 12_000, P99Ns: late.Nanoseconds(), MaxNs: late.Nanoseconds() * 2},
			PercentilesSince: "run",
			RingDrops:        ring,
			Verdict:          v,
		})
	}
	return rep
}
