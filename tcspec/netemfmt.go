package tcspec

import (
	"fmt"

	"wanlab/qdisc"
)

// formatNetem prints netem's options in the order tc shows them.
func formatNetem(c qdisc.NetemConfig) string {
	var b words
	b.add("netem")
	if c.Limit != 0 {
		b.add("limit", fmt.Sprint(c.Limit))
	}
	if c.Delay != 0 || c.Jitter != 0 || c.DelayCorr != 0 || c.Dist.Name != "" {
		b.add("delay", formatDuration(c.Delay))
		if c.Jitter != 0 || c.DelayCorr != 0 {
			b.add(formatDuration(c.Jitter))
			if c.DelayCorr != 0 {
				b.add(formatPercent(c.DelayCorr))
			}
		}
	}
	if c.Dist.Name != "" {
		b.add("distribution", c.Dist.Name)
	}
	formatLoss(&b, c.Loss)
	if c.ECN {
		b.add("ecn")
	}
	formatProbability(&b, "corrupt", c.Corrupt, c.CorruptCorr)
	formatProbability(&b, "duplicate", c.Duplicate, c.DuplicateCorr)
	formatProbability(&b, "reorder", c.Reorder, c.ReorderCorr)
	if c.Gap != 0 && !(prob32(c.Reorder) != 0 && c.Gap == 1) {
		b.add("gap", fmt.Sprint(c.Gap))
	}
	if c.Rate != 0 || c.PacketOverhead != 0 || c.CellSize != 0 || c.CellOverhead != 0 {
		b.add("rate", formatRate(c.Rate))
		if c.PacketOverhead != 0 || c.CellSize != 0 || c.CellOverhead != 0 {
			b.add(fmt.Sprint(c.PacketOverhead))
			if c.CellSize != 0 || c.CellOverhead != 0 {
				b.add(fmt.Sprint(c.CellSize))
				if c.CellOverhead != 0 {
					b.add(fmt.Sprint(c.CellOverhead))
				}
			}
		}
	}
	formatSlot(&b, c.Slot)
	if c.SeedSet {
		b.add("seed", fmt.Sprint(c.Seed))
	}
	if c.Correlation != qdisc.CorrelationCorrect {
		b.add("correlation", c.Correlation.String())
	}
	if c.FIFOJitter {
		b.add("fifo_jitter")
	}
	if c.OldGap {
		b.add("oldgap")
	}
	return b.String()
}

func formatProbability(b *words, kw string, p, corr float64) {
	if p == 0 && corr == 0 {
		return
	}
	b.add(kw, formatPercent(p))
	if corr != 0 {
		b.add(formatPercent(corr))
	}
}

// formatLoss prints the loss model with the shortest argument list that
// reproduces it: trailing arguments equal to tc's defaults are left out.
func formatLoss(b *words, l qdisc.Loss) {
	switch l.Kind {
	case qdisc.LossRandom:
		b.add("loss", "random", formatPercent(l.P))
		if l.Corr != 0 {
			b.add(formatPercent(l.Corr))
		}
	case qdisc.LossState:
		b.add("loss", "state")
		formatPositional(b, []float64{l.P13, l.P31, l.P32, l.P23, l.P14}, []float64{l.P13, 1 - l.P13, 0, 1, 0})
	case qdisc.LossGEModel:
		b.add("loss", "gemodel")
		formatPositional(b, []float64{l.GEP, l.GER, l.OneMinusH, l.OneMinusK}, []float64{l.GEP, 1 - l.GEP, 1, 0})
	}
}

func formatPositional(b *words, vals, defaults []float64) {
	last := 0
	for i := range vals {
		if vals[i] != defaults[i] {
			last = i
		}
	}
	for _, v := range vals[:last+1] {
		b.add(formatPercent(v))
	}
}

func formatSlot(b *words, s qdisc.Slot) {
	if s.Min == 0 && s.Max == 0 && s.Dist.Name == "" && s.DistDelay == 0 && s.DistJitter == 0 && s.Packets == 0 && s.Bytes == 0 {
		return
	}
	if s.Dist.Name != "" {
		b.add("slot", "distribution", s.Dist.Name, formatDuration(s.DistDelay), formatDuration(s.DistJitter))
	} else {
		b.add("slot", formatDuration(s.Min), formatDuration(s.Max))
	}
	if s.Packets != 0 {
		b.add("packets", fmt.Sprint(s.Packets))
	}
	if s.Bytes != 0 {
		b.add("bytes", formatSize(s.Bytes))
	}
}
