package sim_test

import (
	"testing"
	"time"

	"wanlab/link"
	"wanlab/sim"
	"wanlab/tcspec"
)

// BenchmarkSimChain measures how many packets per second of wall time the
// simulator pushes through real disciplines: 1 Gbit/s of 1500-byte CBR
// (one packet every 12 µs of virtual time) through each chain. The goal for
// "netem delay 50ms; tbf ...; fq_codel" is at least 5 million packets/s.
func BenchmarkSimChain(b *testing.B) {
	for _, tc := range []struct{ name, chain string }{
		{"netem_tbf_fqcodel", "netem delay 50ms limit 100000; tbf rate 2gbit burst 1m limit 10m; fq_codel"},
		{"netem_delay", "netem delay 50ms limit 100000"},
		{"netem_jitter", "netem delay 50ms 10ms limit 100000"},
		{"direct", ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			chain, err := tcspec.ParseChain(tc.chain, tcspec.Options{})
			if err != nil {
				b.Fatal(err)
			}
			cfg := sim.Config{
				Duration: time.Duration(b.N) * 12 * time.Microsecond,
				Up:       link.Config{Chain: chain},
				Flows:    []sim.Flow{sim.CBR{Rate: 125e6, Size: 1500}},
			}
			b.ReportAllocs()
			b.ResetTimer()
			res, err := sim.Run(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if res.Up.Sent < uint64(b.N) || res.Up.Dropped != 0 {
				b.Fatalf("sent %d of %d, dropped %d", res.Up.Sent, b.N, res.Up.Dropped)
			}
			b.ReportMetric(float64(res.Up.Sent)/b.Elapsed().Seconds(), "pkts/s")
		})
	}
}
