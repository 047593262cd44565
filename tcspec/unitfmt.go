package tcspec

import (
	"math"
	"strconv"
	"time"

	"wanlab/qdisc"
)

// The printers below choose forms that the readers in units.go turn back
// into exactly the same value: the largest unit that divides the value, and
// percentages chosen among the neighbours of p·100 so that strtod/100
// lands on p again.

// formatRate prints a rate in bits with the largest exact decimal unit, as
// tc's sprint_rate does when the division is exact ("10Mbit").
func formatRate(r qdisc.Rate) string {
	if uint64(r) > math.MaxUint64/8 {
		return strconv.FormatUint(uint64(r), 10) + "Bps"
	}
	bits := uint64(r) * 8
	units := []string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}
	i := 0
	for i < len(units)-1 && bits != 0 && bits%1000 == 0 {
		bits /= 1000
		i++
	}
	return strconv.FormatUint(bits, 10) + units[i]
}

// formatSize prints a byte count as tc's sprint_size does when the value is
// an exact binary multiple ("4Kb", "32Mb"), and as plain bytes otherwise.
func formatSize(n int) string {
	switch {
	case n == 0:
		return "0"
	case n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + "Gb"
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "Mb"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "Kb"
	}
	return strconv.Itoa(n)
}

// formatDuration prints a time with the largest unit that divides it.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0ms"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// formatPercent prints p (in [0,1]) as a percentage that parsePercent reads
// back as p. Every value parsePercent produces has such a form; for other
// values the nearest is printed.
func formatPercent(p float64) string {
	q := p * 100
	up, down := q, q
	for i := 0; i < 8; i++ {
		for _, c := range []float64{up, down} {
			s := strconv.FormatFloat(c, 'g', -1, 64)
			if v, err := strconv.ParseFloat(s, 64); err == nil && v/100 == p {
				return s + "%"
			}
		}
		up = math.Nextafter(up, math.Inf(1))
		down = math.Nextafter(down, math.Inf(-1))
	}
	return strconv.FormatFloat(q, 'g', -1, 64) + "%"
}
