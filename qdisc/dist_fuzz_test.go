package qdisc

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// FuzzParseDistTable checks ParseDistTable against a reference reading of
// a tc distribution file written here independently (C's strtol rules,
// digit by digit): it never panics; it accepts a text exactly when every
// token outside comments is an integer in int16's range and there are 1 to
// MaxDistTable of them; the table it returns holds those values in order;
// and the table written back as text in decimal, hex and octal, one value
// per line with comments, parses to the same table.
func FuzzParseDistTable(f *testing.F) {
	f.Add([]byte("# normal\n-32768 -100 0 1 2\n  3\t4 # end\n"))
	f.Add([]byte("0x7fff -0x8000 010 -07 +5"))
	f.Add([]byte("1 2 3\n08\n"))
	f.Add([]byte("32768"))
	f.Add([]byte("#only a comment\n"))
	f.Add([]byte("1 x 2"))
	f.Add([]byte("0x\n-\n+-1\n00\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		table, err := ParseDistTable(text)
		want, ok := referenceDistTable(string(text))
		if err != nil {
			if table != nil {
				t.Fatalf("a table of %d values and the error %v", len(table), err)
			}
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			if ok {
				t.Fatalf("refused a valid table of %d values: %v", len(want), err)
			}
			return
		}
		if !ok {
			t.Fatalf("accepted %q, which the reference refuses", text)
		}
		if len(table) != len(want) {
			t.Fatalf("%d values, the reference reads %d", len(table), len(want))
		}
		for i := range table {
			if table[i] != want[i] {
				t.Fatalf("value %d is %d, the reference reads %d", i, table[i], want[i])
			}
		}
		var b strings.Builder
		for i, v := range table {
			switch i % 3 {
			case 0:
				fmt.Fprintf(&b, "%d # value %d\n", v, i)
			case 1:
				if v < 0 {
					fmt.Fprintf(&b, "-%#x\n", -int(v))
				} else {
					fmt.Fprintf(&b, "%#x\n", v)
				}
			default:
				if v < 0 {
					fmt.Fprintf(&b, "\t-0%o ", -int(v))
				} else {
					fmt.Fprintf(&b, "\t0%o ", v)
				}
			}
		}
		back, err := ParseDistTable([]byte(b.String()))
		if err != nil || len(back) != len(table) {
			t.Fatalf("the table written back does not parse: %v (%d values of %d)\n%s", err, len(back), len(table), b.String())
		}
		for i := range back {
			if back[i] != table[i] {
				t.Fatalf("value %d written back as %d, was %d", i, back[i], table[i])
			}
		}
	})
}

// referenceDistTable reads text as a tc distribution file: '#' comments to
// the end of the line, white-space separated tokens, each a whole integer
// by strtol(…, 0)'s rules (an optional sign, then 0x/0X and hex digits, a
// leading 0 and octal digits, or decimal digits) within int16, 1 to
// MaxDistTable tokens. It reports whether the text is a valid table.
func referenceDistTable(text string) ([]int16, bool) {
	var out []int16
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, tok := range strings.Fields(line) {
			v, ok := referenceStrtol(tok)
			if !ok || v < math.MinInt16 || v > math.MaxInt16 || len(out) == MaxDistTable {
				return nil, false
			}
			out = append(out, int16(v))
		}
	}
	return out, len(out) > 0
}

// referenceStrtol parses a whole token as strtol with base 0, saturating
// far outside int16 so that the caller's range check sees it.
func referenceStrtol(tok string) (int64, bool) {
	neg := false
	if tok != "" && (tok[0] == '-' || tok[0] == '+') {
		neg = tok[0] == '-'
		tok = tok[1:]
	}
	base := int64(10)
	switch {
	case len(tok) > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X'):
		base, tok = 16, tok[2:]
	case len(tok) > 1 && tok[0] == '0':
		base, tok = 8, tok[1:]
	}
	if tok == "" {
		return 0, false
	}
	var v int64
	for _, c := range []byte(tok) {
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'f':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = min(v*base+d, 1<<40)
	}
	if neg {
		v = -v
	}
	return v, true
}
