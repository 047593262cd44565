package tcspec

import (
	"math"
	"strconv"
	"strings"
)

// This file reproduces how C's strtod and strtoul read the front of a
// string, because tc reads every number with them and then looks at what is
// left over as the unit. Reading "10mbit" as 10 followed by "mbit", or
// "0x10" as sixteen, has to happen exactly as tc does it.

// cfloat is the result of scanning a number the way strtod does.
type cfloat struct {
	v    float64
	n    int  // bytes consumed; 0 means strtod converted nothing
	inf  bool // "inf" or "infinity"
	nan  bool // "nan" or "nan(...)"
	hexa bool // a hexadecimal float
}

// scanFloat scans the longest prefix of s that strtod converts.
func scanFloat(s string) cfloat {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := s[i:]
	switch {
	case hasPrefixFold(rest, "infinity"):
		return cfloat{v: signed(math.Inf(1), neg), n: i + 8, inf: true}
	case hasPrefixFold(rest, "inf"):
		return cfloat{v: signed(math.Inf(1), neg), n: i + 3, inf: true}
	case hasPrefixFold(rest, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return cfloat{v: math.NaN(), n: n, nan: true}
	}
	if len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
		if f, ok := scanHexFloat(s, i+2, neg); ok {
			return f
		}
		// "0x" without hex digits: strtod reads the "0" alone.
		return cfloat{v: signed(0, neg), n: i + 1}
	}
	j, digits := scanMantissa(s, i, isDigit)
	if digits == 0 {
		return cfloat{}
	}
	j = scanExponent(s, j, 'e', 'E')
	v, _ := strconv.ParseFloat(s[:j], 64) // ±Inf on overflow, as strtod's HUGE_VAL
	return cfloat{v: v, n: j}
}

// scanHexFloat scans the digits of a hexadecimal float whose "0x" ends at j.
func scanHexFloat(s string, j int, neg bool) (cfloat, bool) {
	start := j
	j, digits := scanMantissa(s, j, isHex)
	if digits == 0 {
		return cfloat{}, false
	}
	mant := s[start:j]
	exp := "p0"
	if k := scanExponent(s, j, 'p', 'P'); k > j {
		exp = s[j:k]
		j = k
	}
	v, _ := strconv.ParseFloat("0x"+mant+exp, 64)
	return cfloat{v: signed(v, neg), n: j, hexa: true}, true
}

// scanMantissa consumes the digits (those digit takes) of a float's
// mantissa at j, with one '.' among them or after them, and counts them.
func scanMantissa(s string, j int, digit func(byte) bool) (end, digits int) {
	for j < len(s) && digit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && digit(s[j]) {
			j++
			digits++
		}
	}
	return j, digits
}

// scanExponent consumes an exponent (marker, optional sign, at least one
// digit) at j, or nothing if there is no complete one.
func scanExponent(s string, j int, lo, up byte) int {
	if j >= len(s) || (s[j] != lo && s[j] != up) {
		return j
	}
	k := j + 1
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		k++
	}
	d := k
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == d {
		return j
	}
	return k
}

func signed(v float64, neg bool) float64 {
	if neg {
		return -v
	}
	return v
}

// cuint is the result of scanning an integer the way strtoul/strtol do.
type cuint struct {
	mag      uint64 // magnitude, saturated on overflow
	n        int    // bytes consumed; 0 means nothing converted
	neg      bool
	overflow bool
}

// scanUint scans an integer in base 0 (C prefixes: 0x hex, 0 octal), 10 or
// 16, as strtoul does.
func scanUint(s string, base int) cuint {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if (base == 0 || base == 16) && len(s) >= i+3 && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && isHex(s[i+2]) {
		base = 16
		i += 2
	} else if base == 0 {
		base = 10
		if i < len(s) && s[i] == '0' {
			base = 8
		}
	}
	var r cuint
	r.neg = neg
	j := i
	for j < len(s) {
		d := digitVal(s[j])
		if d >= base {
			break
		}
		if !r.overflow {
			hi, lo := mulAdd(r.mag, uint64(base), uint64(d))
			if hi {
				r.overflow = true
				r.mag = math.MaxUint64
			} else {
				r.mag = lo
			}
		}
		j++
	}
	if j == i {
		return cuint{}
	}
	r.n = j
	return r
}

// mulAdd returns a*b+c and whether it overflowed 64 bits.
func mulAdd(a, b, c uint64) (bool, uint64) {
	if a != 0 && b > math.MaxUint64/a {
		return true, 0
	}
	p := a * b
	if p > math.MaxUint64-c {
		return true, 0
	}
	return false, p + c
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return digitVal(c) < 16 }
func isAlnum(c byte) bool { return digitVal(c) < 36 }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
