package results

import (
	"math"
	"slices"
)

// HostFairnessSeries returns the name of wanlab's series of Jain's index
// over hosts of the direction dir ("up" or "down"): "TCP upload hosts
// fairness" or "TCP download hosts fairness".
func HostFairnessSeries(dir string) string {
	if dir == "up" {
		return "TCP upload hosts fairness"
	}
	return "TCP download hosts fairness"
}

// IsWanlabSeries reports whether the top-level series name is one of
// wanlab's own computed series (the hosts' fairness, HostFairnessSeries),
// which no Flent test defines: the Flent export leaves it out, and no
// computed series of Flent's takes it as a source.
func IsWanlabSeries(name string) bool {
	return name == HostFairnessSeries("up") || name == HostFairnessSeries("down")
}

// addHostFairness adds (or replaces) the series of the hosts' fairness
// (HostFairnessSeries), one for each direction that FairnessOverHosts has
// a figure for, over the same hosts and flows: at each grid point, Jain's
// index of each host's sum of its flows' values there, over the hosts
// that have one (a host's flows without a value there add nothing; a host
// none of whose flows has one is left out), with no value where no host
// has one or all are 0, as Flent's fairness series. The series that the
// direction no longer has are removed.
//
// FairnessOverHosts reads the summaries, so the load flows' main series
// are summarised first (as Summarize would summarise them).
func (d *Document) addHostFairness() {
	for i := range d.Flows {
		if f := &d.Flows[i]; f.Direction == "up" || f.Direction == "down" {
			if s := d.series(f.Label); s != nil {
				s.Summarize(d.Run.StepS)
			}
		}
	}
	d.Series = slices.DeleteFunc(d.Series, func(s Series) bool { return IsWanlabSeries(s.Name) })
	n := d.GridLen()
	for _, hf := range d.FairnessOverHosts() {
		out := Series{Name: HostFairnessSeries(hf.Direction), Unit: RunStatUnit, Window: [2]float64{math.Inf(1), math.Inf(-1)}}
		// grids[h] are the grids of host h's flows.
		grids := make([][][]float64, len(hf.Hosts))
		for h, host := range hf.Hosts {
			for _, id := range host.Flows {
				s := d.series(d.flowByID(id).Label)
				grids[h] = append(grids[h], Grid(s.Samples, d.Run.StepS, n))
				out.Window[0] = min(out.Window[0], s.Window[0])
				out.Window[1] = max(out.Window[1], s.Window[1])
			}
		}
		sums := make([]float64, 0, len(grids))
		for k := 0; k < n; k++ {
			sums = sums[:0]
			for _, hostGrids := range grids {
				sum, has := 0.0, false
				for _, g := range hostGrids {
					if !math.IsNaN(g[k]) {
						sum, has = sum+g[k], true
					}
				}
				if has {
					sums = append(sums, sum)
				}
			}
			if len(sums) == 0 {
				continue
			}
			if v := reduceFairness.apply(sums); !math.IsNaN(v) {
				out.Samples = append(out.Samples, Sample{T: GridTime(k, d.Run.StepS), V: v})
			}
		}
		out.Summarize(d.Run.StepS)
		d.Series = append(d.Series, out)
	}
}
