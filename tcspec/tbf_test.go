package tcspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"wanlab/qdisc"
)

func TestTBF(t *testing.T) {
	tests := []struct {
		in   string
		want qdisc.TBFConfig
	}{
		// tc-tbf(8)'s examples: 32kbit is 4096 bytes; latency 400ms at
		// 1mbit (125000 B/s) is 50000 bytes on top of the burst.
		{"tbf rate 1mbit burst 32kbit latency 400ms", qdisc.TBFConfig{Rate: 125000, Burst: 4096, Limit: 54096}},
		{"tbf rate 1mbit burst 4096 limit 54096", qdisc.TBFConfig{Rate: 125000, Burst: 4096, Limit: 54096}},
		{"tc qdisc add dev eth0 parent 1:1 tbf rate 10mbit buffer 10000 limit 30000", qdisc.TBFConfig{Rate: 1250000, Burst: 10000, Limit: 30000}},
		// With a peakrate the smaller of rate·lat+burst and peak·lat+mtu:
		// 125000·0.05+10240 = 16490 against 250000·0.05+1500 = 14000.
		{"tbf rate 1mbit burst 10kb peakrate 2mbit mtu 1500 latency 50ms", qdisc.TBFConfig{Rate: 125000, Burst: 10240, Limit: 14000, PeakRate: 250000, MTU: 1500}},
		// ... and the first when it is smaller: 1250000·0.001+1514 = 2764
		// against 12500000·0.001+1514 = 14014.
		{"tbf rate 10mbit burst 1514 peakrate 100mbit minburst 1514 latency 1ms", qdisc.TBFConfig{Rate: 1250000, Burst: 1514, Limit: 2764, PeakRate: 12500000, MTU: 1514}},
		// The double arithmetic truncates: 1000·0.0333 = 33.3 → 33+100.
		{"tbf rate 8kbit burst 100 latency 33300us", qdisc.TBFConfig{Rate: 1000, Burst: 100, Limit: 133}},
		{"tbf rate 1mbit maxburst 3k/8 limit 10k mpu 64 overhead 24 linklayer atm", qdisc.TBFConfig{Rate: 125000, Burst: 3072, Limit: 10240, MPU: 64, Overhead: 24, Link: qdisc.LinkATM}},
		// "l" and "li" are limit (tc tries limit first); "lin" is linklayer.
		{"tbf rate 1mbit b 3k l 10k lin adsl", qdisc.TBFConfig{Rate: 125000, Burst: 3072, Limit: 10240, Link: qdisc.LinkATM}},
		{"tbf rate 1mbit burst 3k limit 10k linklayer e pe 2mbit mtu 2k", qdisc.TBFConfig{Rate: 125000, Burst: 3072, Limit: 10240, PeakRate: 250000, MTU: 2048}},
		{"tbf rate 1mbit burst 3k limit 10k mtu 1514", qdisc.TBFConfig{Rate: 125000, Burst: 3072, Limit: 10240, MTU: 1514}},
		// tc's duplicate checks look at values: a zero one may be repeated.
		{"tbf rate 1mbit burst 0 burst 2k limit 0 limit 5k", qdisc.TBFConfig{Rate: 125000, Burst: 2048, Limit: 5120}},
	}
	for _, tt := range tests {
		got := mustParse(t, tt.in, Options{})
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
	}
}

func TestTBFErrors(t *testing.T) {
	tests := []struct {
		in, token string
		msg       []string
	}{
		{"tbf burst 10k limit 10k", "", []string{`the "rate" parameter is mandatory`, "rate 10mbit"}},
		{"tbf rate 1mbit limit 10k", "", []string{`the "burst" parameter is mandatory`}},
		{"tbf rate 1mbit burst 10k", "", []string{`either "limit" or "latency" is required`}},
		{"tbf rate 1mbit burst 10k latency 0ms", "", []string{`either "limit" or "latency" is required`}},
		{"tbf rate 1mbit burst 10k limit 10k peakrate 2mbit", "", []string{`"mtu" must also be specified`}},
		// tc reports every missing parameter at once.
		{"tbf", "", []string{`"rate"`, `"burst"`, `"limit" or "latency"`}},
		{"tbf rate 1mbit burst 10k limit 10k latency 5ms", "latency", []string{"together"}},
		{"tbf rate 1mbit burst 10k latency 5ms limit 10k", "limit", []string{"together"}},
		{"tbf rate 1mbit rate 2mbit", "rate", []string{"twice"}},
		{"tbf burst 1k buffer 2k", "buffer/burst/maxburst", []string{"twice"}},
		{"tbf r 1mbit burst 1k limit 1k", "r", []string{`"r" is not a tbf option`, "rate RATE"}}, // rate is a whole word
		{"tbf rate 1mbit buf 1k limit 1k", "buf", []string{"not a tbf option"}},
		{"tbf rate 1mbit burst 1k/3 limit 1k", "1k/3", []string{"power of two"}},
		{"tbf rate 1mbit burst 1k limit 1k overhead 70000", "70000", []string{"at most 65535"}},
		{"tbf rate 1mbit burst 1k limit 1k overhead -4", "-4", []string{"negative"}},
		{"tbf rate 1mbit burst 1k limit 1k linklayer ppp", "ppp", []string{"ethernet, atm or adsl"}},
		{"tbf rate 10% burst 1k limit 1k", "10%", []string{"no percentages"}},
		{"tbf rate 1tbit burst 1k latency 4000s", "latency", []string{"above 4Gb"}},
		{"tbf rate 1mbit burst 1k latency 5", "", nil}, // 5 µs: valid
	}
	for _, tt := range tests {
		_, err := Parse(tt.in, Options{})
		if tt.msg == nil {
			if err != nil {
				t.Errorf("Parse(%q): %v", tt.in, err)
			}
			continue
		}
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Parse(%q) = %v, want an *Error", tt.in, err)
			continue
		}
		if te.Kind != "tbf" || te.Token != tt.token {
			t.Errorf("Parse(%q): Kind %q Token %q, want tbf %q (%v)", tt.in, te.Kind, te.Token, tt.token, err)
		}
		for _, m := range tt.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("Parse(%q): %q does not say %q", tt.in, err, m)
			}
		}
	}
}
