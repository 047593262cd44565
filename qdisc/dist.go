package qdisc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Distribution tables, as tc's .dist files and the kernel hold them.
const (
	// DistScale is NETEM_DIST_SCALE: a table entry t stands for t/8192
	// standard deviations.
	DistScale = 8192
	// MaxDistTable is NETEM_DIST_MAX, the most entries the kernel accepts.
	MaxDistTable = 16384
	// builtinTableSize is the size of the tables iproute2 generates.
	builtinTableSize = 4096
)

var builtinTables struct {
	once                         sync.Once
	normal, pareto, paretonormal []int16
}

func loadBuiltinTables() {
	builtinTables.once.Do(func() {
		builtinTables.normal = normalTable()
		builtinTables.pareto = paretoTable()
		builtinTables.paretonormal = paretoNormalTable()
	})
}

// BuiltinDistribution returns one of the distributions that iproute2 ships
// (and that tc loads from /usr/lib/tc/NAME.dist), generated here exactly as
// iproute2's netem/normal.c, pareto.c and paretonormal.c generate them:
// "uniform" (no table: the kernel's own uniform jitter), "normal", "pareto"
// and "paretonormal". The tables are computed once, on first use, and are
// shared: callers must not modify them. ok is false for any other name.
func BuiltinDistribution(name string) (d Distribution, ok bool) {
	switch name {
	case "uniform":
		return Distribution{Name: name}, true
	case "normal", "pareto", "paretonormal":
	default:
		return Distribution{}, false
	}
	loadBuiltinTables()
	switch name {
	case "normal":
		d.Table = builtinTables.normal
	case "pareto":
		d.Table = builtinTables.pareto
	default:
		d.Table = builtinTables.paretonormal
	}
	d.Name = name
	return d, true
}

// normalCDFIndex is the inverse of the normal CDF sampled as normal.c does:
// for x from -10 to 10.05 in steps of 5e-5 (accumulated in floating point,
// as the C loop does), the last x whose CDF rounds to i/16384 is kept.
func normalCDFIndex() []float64 {
	const size = 4 * builtinTableSize
	t := make([]float64, size+1)
	for x := -10.0; x < 10.05; x += .00005 {
		i := int(math.RoundToEven(size * (.5 + .5*math.Erf(x/math.Sqrt2))))
		t[i] = x
	}
	return t
}

func clampInt16(v int) int16 {
	return int16(min(max(v, math.MinInt16), math.MaxInt16))
}

// normalTable is every fourth entry of the sampled inverse CDF, scaled.
func normalTable() []int16 {
	t := normalCDFIndex()
	out := make([]int16, 0, builtinTableSize)
	for i := 0; i < 4*builtinTableSize; i += 4 {
		out = append(out, clampInt16(int(math.RoundToEven(t[i]*DistScale))))
	}
	return out
}

// paretoValue is pareto.c's entry for i in (0, 65536]: the inverse CDF of a
// Pareto distribution with alpha 3 at i/65536, shifted by its mean (1.5)
// and scaled by 4/3, capped at 32767.
func paretoValue(i int) int {
	v := 1.0 / math.Pow(float64(i)/65536, 1.0/3.0)
	v -= 1.5
	v *= (4.0 / 3.0) * DistScale
	if v > 32767 {
		v = 32767
	}
	return int(math.RoundToEven(v))
}

func paretoTable() []int16 {
	out := make([]int16, 0, builtinTableSize)
	for i := 65536; i > 0; i -= 16 {
		out = append(out, int16(paretoValue(i)))
	}
	return out
}

// paretoNormalTable mixes a quarter of normal with three quarters of
// pareto, entry by entry, with C's truncating integer division.
func paretoNormalTable() []int16 {
	t := normalCDFIndex()
	out := make([]int16, 0, builtinTableSize)
	for i := 0; i < 4*builtinTableSize; i += 4 {
		norm := int(math.RoundToEven(t[i] * DistScale))
		par := paretoValue(65536 - 4*i)
		out = append(out, clampInt16((norm+3*par)/4))
	}
	return out
}

// ParseDistTable parses a tc distribution file (/usr/lib/tc/NAME.dist):
// integers separated by white space, '#' starting a comment that runs to
// the end of the line, 1 to 16384 values in all. Numbers are read as
// strtol(…, 0) reads them (decimal, 0x hex, leading-0 octal). It is
// stricter than tc, which silently stops reading a line at the first token
// that is not a number and silently truncates values outside int16: here
// both are errors that name the line and the token.
func ParseDistTable(text []byte) ([]int16, error) {
	var out []int16
	for lineNo, line := range strings.Split(string(text), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, tok := range strings.Fields(line) {
			v, err := parseCInt(tok)
			if err != nil {
				return nil, fmt.Errorf("distribution table: line %d: %q is not an integer", lineNo+1, tok)
			}
			if v < math.MinInt16 || v > math.MaxInt16 {
				return nil, fmt.Errorf("distribution table: line %d: %q is outside the int16 range [-32768, 32767] of a table entry", lineNo+1, tok)
			}
			if len(out) == MaxDistTable {
				return nil, fmt.Errorf("distribution table: line %d: more than %d values (the kernel's NETEM_DIST_MAX)", lineNo+1, MaxDistTable)
			}
			out = append(out, int16(v))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("distribution table: no values (a table needs 1 to %d integers)", MaxDistTable)
	}
	return out, nil
}

// parseCInt parses an optionally signed integer with C's base-0 prefixes.
func parseCInt(tok string) (int64, error) {
	s, neg := tok, false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, strconv.ErrSyntax
	}
	v, err := strconv.ParseInt(s, base, 64)
	if neg {
		v = -v
	}
	return v, err
}

// maketable's constants: the domain of the normalised variable is
// [-4, 4) sampled every 1/50000, and the inverse has 4096 entries.
const (
	mtDomain      = math.MaxInt16/DistScale + 1
	mtGranularity = 50000
	mtSize        = mtDomain * mtGranularity * 2
)

// MakeDistTable builds a distribution table from samples as iproute2's
// maketable does: normalise the samples by their mean and sample standard
// deviation, histogram them over [-4, 4) in steps of 2e-5, invert the
// cumulative histogram into 4096 entries scaled by 8192, and fill the
// entries the inversion left empty by linear interpolation. It needs at
// least two finite samples that are not all equal.
func MakeDistTable(samples []float64) ([]int16, error) {
	n := len(samples)
	if n < 2 {
		return nil, fmt.Errorf("distribution samples: %d given, need at least 2", n)
	}
	var sum, sumSq float64
	for i, x := range samples {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("distribution samples: sample %d is %v; give finite numbers", i, x)
		}
		sum += x
		sumSq += x * x
	}
	mu := sum / float64(n)
	sigma := math.Sqrt((sumSq - float64(n)*mu*mu) / float64(n-1))
	if !(sigma > 0) {
		return nil, fmt.Errorf("distribution samples: all %d samples are equal (no spread to tabulate)", n)
	}

	hist := make([]int, mtSize)
	for _, x := range samples {
		v := math.RoundToEven(((x-mu)/sigma + mtDomain) * mtGranularity)
		idx := mtSize - 1
		switch {
		case v < 0:
			idx = 0
		case v < mtSize:
			idx = int(v)
		}
		hist[idx]++
	}
	total := 0
	for i, c := range hist {
		total += c
		hist[i] = total
	}

	const empty = math.MinInt16
	inv := make([]int, builtinTableSize)
	for i := range inv {
		inv[i] = empty
	}
	for i, cum := range hist {
		x := float64(i)/mtGranularity - mtDomain
		idx := int(math.RoundToEven(float64(cum) / float64(total) * builtinTableSize))
		val := int(math.RoundToEven(x * DistScale))
		if val <= math.MinInt16 {
			val = math.MinInt16 + 1
		}
		if val > math.MaxInt16 {
			val = math.MaxInt16
		}
		if idx >= builtinTableSize {
			idx = builtinTableSize - 1
		}
		inv[idx] = val
	}

	// Interpolate from the last filled entry to the next one (or towards
	// 32767 past the end), with C's truncating division.
	last, lastI := empty, -1
	for i := range inv {
		if inv[i] != empty {
			last, lastI = inv[i], i
			continue
		}
		j := i
		for j < len(inv) && inv[j] == empty {
			j++
		}
		if j < len(inv) {
			inv[i] = last + (i-lastI)*(inv[j]-last)/(j-lastI)
		} else {
			inv[i] = last + (i-lastI)*(math.MaxInt16-last)/(len(inv)-lastI)
		}
	}
	out := make([]int16, len(inv))
	for i, v := range inv {
		out[i] = int16(v)
	}
	return out, nil
}
