package tcspec

import (
	"math"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

func TestGetRate64(t *testing.T) {
	const k, ki = 1000.0, 1024.0
	tests := []struct {
		in   string
		bits float64 // expected bit/s; the result is bits/8 truncated
	}{
		{"1000", 1000}, {"8bit", 8}, {"8BIT", 8},
		{"1kbit", k}, {"1Kbit", k}, {"1KBIT", k}, {"1kibit", ki}, {"1KiBit", ki},
		{"1mbit", k * k}, {"1Mbit", k * k}, {"1mibit", ki * ki},
		{"1gbit", k * k * k}, {"1gibit", ki * ki * ki},
		{"1tbit", k * k * k * k}, {"1tibit", ki * ki * ki * ki},
		{"1bps", 8}, {"1Bps", 8}, {"1kbps", 8 * k}, {"1KBps", 8 * k}, {"1kibps", 8 * ki},
		{"10mbps", 80 * k * k}, {"1mibps", 8 * ki * ki}, {"1gbps", 8 * k * k * k},
		{"1gibps", 8 * ki * ki * ki}, {"1tbps", 8e12}, {"1tibps", 8 * ki * ki * ki * ki},
		{"1.5kbit", 1500},   // 187.5 B/s truncated to 187
		{"0x10kbit", 16000}, // strtod reads hexadecimal
		{"1e3kbit", 1e6},
		{"+2mbit", 2e6},
		{"0", 0},
	}
	for _, tt := range tests {
		got, err := getRate64(tt.in)
		if err != nil {
			t.Errorf("getRate64(%q): %v", tt.in, err)
			continue
		}
		if want := qdisc.Rate(tt.bits / 8); got != want {
			t.Errorf("getRate64(%q) = %d B/s, want %d", tt.in, got, want)
		}
	}
	for _, bad := range []string{"", "mbit", "10mbitz", "10mbit/s", "-1mbit", "nan", "inf", "1e30tbit", "10m", "10 mbit"} {
		if r, err := getRate64(bad); err == nil {
			t.Errorf("getRate64(%q) = %d, want an error", bad, r)
		}
	}
}

// ParseRate takes tc's units, in which mbps is megabytes per second as in
// tc(8), and iperf's letters, which are bits (iperf -b), in either case;
// what it refuses, it says how to write.
func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		bits float64
	}{
		{"64000", 64000}, {"8bit", 8}, {" 20mbit ", 20e6},
		{"100mbit", 100e6}, {"10Mbit", 10e6}, {"1.5gbit", 1.5e9}, {"1tbit", 1e12},
		{"1kibit", 1024}, {"1mibit", 1 << 20},
		{"1bps", 8}, {"10mbps", 80e6}, {"10MBps", 80e6}, {"1kibps", 8 * 1024}, {"1gbps", 8e9},
		{"20M", 20e6}, {"20m", 20e6}, {"500k", 500e3}, {"500K", 500e3}, {"2G", 2e9}, {"1T", 1e12}, {"2.5M", 2.5e6},
		{"0", 0}, {"1e3kbit", 1e6}, {"0x10kbit", 16000},
	} {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.bits {
			t.Errorf("ParseRate(%q) = %v bit/s, %v; want %v", tt.in, got, err, tt.bits)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"", `bad rate "": use a number with a unit: bit, kbit, mbit`},
		{"fast", `bad rate "fast": use a number with a unit`},
		{"10mbz", `bad rate "10mbz": unknown unit "mbz": use a number with a unit`},
		{"10 mbit", `unknown unit " mbit"`},
		{"10Mb", `unknown unit "Mb"`},
		{"10mbit/s", `unknown unit "mbit/s"`},
		{"-5M", `bad rate "-5M": out of range`},
		{"nan", "out of range"},
		{"inf", "out of range"},
		{"1e400bit", "out of range"},
	} {
		_, err := ParseRate(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRate(%q): %v; want an error saying %q", tt.in, err, tt.want)
			continue
		}
		// Every refusal lists both spellings, and what mbps means.
		for _, say := range []string{"kbit", "10mbps is 80 Mbit/s", "iperf's k, m, g, t for bits", "20M is 20 Mbit/s"} {
			if !strings.Contains(err.Error(), say) {
				t.Errorf("ParseRate(%q): %q does not say %q", tt.in, err, say)
			}
		}
	}
	// A qdisc's rate is tc's alone: tc refuses iperf's letters.
	for _, in := range []string{"20M", "500k"} {
		if _, err := getRate64(in); err == nil || strings.Contains(err.Error(), "iperf") {
			t.Errorf("getRate64(%q): %v; want tc's refusal", in, err)
		}
	}
}

func TestGetPercentRate64(t *testing.T) {
	tests := []struct {
		in    string
		speed uint64
		want  qdisc.Rate
	}{
		{"10%", 1e9, 100e6 / 8},
		{"100%", 10e6, 10e6 / 8},
		{"0.5%", 1e9, 5e6 / 8},
		{"50%junk", 1e9, 500e6 / 8}, // tc's sscanf stops at the first other character
	}
	for _, tt := range tests {
		got, err := getPercentRate64(tt.in, tt.speed)
		if err != nil || got != tt.want {
			t.Errorf("getPercentRate64(%q, %d) = %d, %v; want %d", tt.in, tt.speed, got, err, tt.want)
		}
	}
	for _, bad := range []struct {
		in    string
		speed uint64
	}{{"10%", 0}, {"101%", 1e9}, {"x%", 1e9}, {"1.2.3%", 1e9}} {
		if _, err := getPercentRate64(bad.in, bad.speed); err == nil {
			t.Errorf("getPercentRate64(%q, %d): want an error", bad.in, bad.speed)
		}
	}
	if _, err := getPercentRate64("10%", 0); err == nil || !contains(err.Error(), "link speed") {
		t.Errorf("percent rate without link speed: %v, want an error about the link speed", err)
	}
}

func TestGetSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
	}{
		{"1000", 1000}, {"1b", 1}, {"1B", 1},
		{"1k", 1024}, {"1kb", 1024}, {"1K", 1024}, {"1KB", 1024}, {"1.5k", 1536},
		{"1m", 1 << 20}, {"1mb", 1 << 20}, {"1MB", 1 << 20},
		{"1g", 1 << 30}, {"1gb", 1 << 30}, {"3G", 3 << 30},
		{"32kbit", 4096}, {"1Kbit", 128}, {"1mbit", 1 << 17}, {"1gbit", 1 << 27},
		{"1.7", 1}, {"0x10", 16}, {"0", 0},
	}
	for _, tt := range tests {
		got, err := getSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("getSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "k", "1kib", "1x", "-1", "4g", "nan", "inf", "1 k"} {
		if n, err := getSize(bad); err == nil {
			t.Errorf("getSize(%q) = %d, want an error", bad, n)
		}
	}
}

func TestGetSizeAndCell(t *testing.T) {
	for in, want := range map[string]uint32{"10k": 10240, "10k/8": 10240, "1514/1": 1514, "2k/0x10": 2048} {
		if got, err := getSizeAndCell(in); err != nil || got != want {
			t.Errorf("getSizeAndCell(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"10k/3", "10k/0", "10k/", "10k/-8", "x/8", "10k/8/8"} {
		if _, err := getSizeAndCell(bad); err == nil {
			t.Errorf("getSizeAndCell(%q): want an error", bad)
		}
	}
}

func TestGetTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"100", 100 * time.Microsecond}, // get_time: a bare number is µs
		{"1s", time.Second}, {"1sec", time.Second}, {"1secs", time.Second}, {"1S", time.Second}, {"2SECS", 2 * time.Second},
		{"5ms", 5 * time.Millisecond}, {"5msec", 5 * time.Millisecond}, {"5msecs", 5 * time.Millisecond}, {"5MS", 5 * time.Millisecond},
		{"7us", 7 * time.Microsecond}, {"7usec", 7 * time.Microsecond}, {"7usecs", 7 * time.Microsecond},
		{"1.5us", time.Microsecond}, // truncated to whole µs
		{"0.5ms", 500 * time.Microsecond},
		{"0", 0},
	}
	for _, tt := range tests {
		got, err := getTime(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("getTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ms", "5mz", "5ns", "-1ms", "4295s", "nan", "5 ms", "5m"} {
		if d, err := getTime(bad); err == nil {
			t.Errorf("getTime(%q) = %v, want an error", bad, d)
		}
	}
}

func TestGetTime64(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"1ns", 1}, {"3nsec", 3}, {"3nsecs", 3}, {"3NS", 3},
		{"1.5us", 1500}, {"1us", time.Microsecond}, {"2usec", 2 * time.Microsecond},
		{"100ms", 100 * time.Millisecond}, {"1.5ms", 1500 * time.Microsecond},
		{"2s", 2 * time.Second}, {"2sec", 2 * time.Second},
		{"0", 0}, {"-5ms", -5 * time.Millisecond},
	}
	for _, tt := range tests {
		got, err := getTime64(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("getTime64(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	// tc's get_time64 reads a bare number as ns.
	if d, err := getTime64("100"); err != nil || d != 100 {
		t.Errorf("getTime64(\"100\") = %v, %v; want 100ns", d, err)
	}
	for _, bad := range []string{"", "5mz", "1e20s", "nan", "inf"} {
		if d, err := getTime64(bad); err == nil {
			t.Errorf("getTime64(%q) = %v, want an error", bad, d)
		}
	}
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"1", 0.01}, {"1%", 0.01}, {"25%", 0.25}, {"100%", 1}, {"0", 0}, {"0.3%", 0.003},
		{"1e1%", 0.1}, {"-0", 0},
		{"%", 0}, // strtod converts nothing and tc accepts what is left, "%"
	}
	for _, tt := range tests {
		got, err := parsePercent(tt.in)
		if err != nil || got != tt.want || math.Signbit(got) {
			t.Errorf("parsePercent(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"101", "100.1%", "-1", "1%%", "1 %", "1x", "nan", "inf", "x"} {
		if p, err := parsePercent(bad); err == nil {
			t.Errorf("parsePercent(%q) = %v, want an error", bad, p)
		}
	}
}

func TestGetUintInt(t *testing.T) {
	uints := []struct {
		in   string
		base int
		max  uint64
		want uint64
	}{
		{"10", 0, math.MaxUint32, 10}, {"0x10", 0, math.MaxUint32, 16}, {"010", 0, math.MaxUint32, 8},
		{"+5", 0, math.MaxUint32, 5}, {"-0", 0, math.MaxUint32, 0}, {"4294967295", 0, math.MaxUint32, math.MaxUint32},
		{"010", 10, math.MaxUint32, 10}, {"18446744073709551615", 10, math.MaxUint64, math.MaxUint64},
	}
	for _, tt := range uints {
		if got, err := getUint(tt.in, tt.base, tt.max); err != nil || got != tt.want {
			t.Errorf("getUint(%q, %d) = %d, %v; want %d", tt.in, tt.base, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "08", "0x", "-1", "4294967296", "1k", "x", "1.0"} {
		if n, err := getUint(bad, 0, math.MaxUint32); err == nil {
			t.Errorf("getUint(%q) = %d, want an error", bad, n)
		}
	}
	if _, err := getUint("18446744073709551616", 10, math.MaxUint64); err == nil {
		t.Error("getUint(2^64): want an overflow error")
	}
	ints := map[string]int64{"-4": -4, "14": 14, "0x10": 16, "-2147483648": math.MinInt32, "2147483647": math.MaxInt32}
	for in, want := range ints {
		if got, err := getInt(in, 0, math.MinInt32, math.MaxInt32); err != nil || got != want {
			t.Errorf("getInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"2147483648", "-2147483649", "--1", "1-", "9223372036854775808"} {
		if n, err := getInt(bad, 0, math.MinInt32, math.MaxInt32); err == nil {
			t.Errorf("getInt(%q) = %d, want an error", bad, n)
		}
	}
}

func TestScanFloat(t *testing.T) {
	tests := []struct {
		in string
		v  float64
		n  int
	}{
		{"10mbit", 10, 2}, {"1.5ms", 1.5, 3}, {".5k", 0.5, 2}, {"5.", 5, 2},
		{"1e3x", 1000, 3}, {"1e", 1, 1}, {"1e+", 1, 1}, {"1e-2%", 0.01, 4},
		{"0x1p4k", 16, 5}, {"0x1.8", 1.5, 5}, {"0xg", 0, 1}, {"0x", 0, 1},
		{"-2s", -2, 2}, {"+.5", 0.5, 3}, {"x", 0, 0}, {".", 0, 0}, {"", 0, 0},
	}
	for _, tt := range tests {
		f := scanFloat(tt.in)
		if f.v != tt.v || f.n != tt.n {
			t.Errorf("scanFloat(%q) = %v,%d; want %v,%d", tt.in, f.v, f.n, tt.v, tt.n)
		}
	}
	for in, n := range map[string]int{"inf": 3, "Infinity": 8, "-INFx": 4, "nan": 3, "nan(0x1)s": 8, "NaN(": 3} {
		if f := scanFloat(in); f.n != n || !(f.inf || f.nan) {
			t.Errorf("scanFloat(%q) = %+v, want inf or nan of %d bytes", in, f, n)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		w, kw string
		want  bool
	}{
		{"d", "delay", true}, {"delay", "delay", true}, {"delays", "delay", false},
		{"", "delay", false}, {"D", "delay", false}, {"dist", "distribution", true},
	} {
		if got := matches(tt.w, tt.kw); got != tt.want {
			t.Errorf("matches(%q, %q) = %v", tt.w, tt.kw, got)
		}
	}
}

// The printers' output must read back to the same value (for values the
// readers can produce: doubles hold 53 bits, so huge values are powers).
func TestUnitFormatsReparse(t *testing.T) {
	for _, r := range []qdisc.Rate{1, 125, 187, 1250, 1250000, 125000000, 1 << 40, 1 << 61, 1<<62 + 1<<40} {
		s := formatRate(r)
		if got, err := getRate64(s); err != nil || got != r {
			t.Errorf("formatRate(%d) = %q, which reads as %d, %v", r, s, got, err)
		}
	}
	if got := formatRate(1250000); got != "10Mbit" {
		t.Errorf("formatRate(1250000) = %q, want 10Mbit", got)
	}
	for _, n := range []int{0, 1, 1000, 1024, 1536, 4096, 54096, 32 << 20, 3 << 30, 1<<32 - 1} {
		s := formatSize(n)
		if got, err := getSize(s); err != nil || int(got) != n {
			t.Errorf("formatSize(%d) = %q, which reads as %d, %v", n, s, got, err)
		}
	}
	for _, d := range []time.Duration{0, 1, 1500, time.Microsecond, 1500 * time.Microsecond, 100 * time.Millisecond, 90 * time.Second, 1 << 62} {
		s := formatDuration(d)
		if got, err := getTime64(s); err != nil || got != d {
			t.Errorf("formatDuration(%d) = %q, which reads as %d, %v", d, s, got, err)
		}
	}
	for _, s := range []string{"0", "1", "25", "0.1", "0.07", "33.333333", "99.99", "1e-10", "100", "7.000000000000001", "0.3"} {
		p, err := parsePercent(s)
		if err != nil {
			t.Fatal(err)
		}
		f := formatPercent(p)
		if got, err := parsePercent(f); err != nil || got != p {
			t.Errorf("formatPercent(%v) = %q, which reads as %v, %v", p, f, got, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"500ms", 500 * time.Millisecond, ""},
		{"1.5s", 1500 * time.Millisecond, ""},
		{"2SECS", 2 * time.Second, ""},
		{"10usec", 10 * time.Microsecond, ""},
		{"7ns", 7, ""},
		{"0.4ns", 0, ""},
		{"0.6ns", 1, ""},
		{"0s", 0, ""},
		{"", 0, "not a time"},
		{"ms", 0, "not a time"},
		{"500", 0, "no unit"},
		{"5min", 0, `unknown unit "min"`},
		{"-1ms", 0, "non-negative"},
		{"nanms", 0, "non-negative"},
		{"1e30s", 0, "non-negative"},
	} {
		got, err := ParseTime(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseTime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseTime(%q) = %v, %v; want an error saying %q", c.in, got, err, c.err)
		}
	}
}

// ParseSize takes tc's sizes: bytes, binary multiples, and bits in binary
// multiples (kbit is 128 bytes).
func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in    string
		bytes uint32
	}{
		{"1514", 1514}, {" 32k ", 32 << 10}, {"32kb", 32 << 10}, {"10KB", 10 << 10}, {"2m", 2 << 20}, {"2mb", 2 << 20},
		{"1g", 1 << 30}, {"100b", 100}, {"8kbit", 1024}, {"1mbit", 128 << 10},
	} {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.bytes {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tt.in, got, err, tt.bytes)
		}
	}
	for _, bad := range []string{"", "big", "10kib", "-1k", "4g", "10ms"} {
		if n, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %v, want an error", bad, n)
		}
	}
}
