package traffic

import (
	"context"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/roottest"
	"wanlab/internal/traffictest"
)

func TestFloodLoopback(t *testing.T) {
	quiet(t)
	noLeaks(t)
	// Rates and delays are timing figures: a busy machine gets a second
	// attempt.
	roottest.Twice(t, "UDP flood on loopback", func(rep roottest.Reporter) {
		c4, s4 := loopback(lo4)
		c6, s6 := loopback(lo6)
		up := traffictest.Must(t, NewFlood, FloodConfig{Label: "UDP upload", Client: c4, Server: s4, Rate: 20e6, TOS: 0x20, Stop: 2 * time.Second})
		down := traffictest.Must(t, NewFlood, FloodConfig{Label: "UDP6 download", Client: c6, Server: s6, Dir: Down, Rate: 5e6, Size: 1000,
			Start: 500 * time.Millisecond, Stop: 1500 * time.Millisecond})
		res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: 2300 * time.Millisecond, Flows: []Flow{up, down}})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []struct {
			rate    float64
			size    int
			packets uint64
		}{
			// Packet i is due at i·gap while before Stop: gap is
			// 1470·8/20e6 = 588 µs, so i = 0 … 3401 in 2 s; 1000·8/5e6 =
			// 1.6 ms, so i = 0 … 624 in 1 s.
			{20e6, 1470, 3402},
			{5e6, 1000, 625},
		} {
			r := res.Flows[i].(*FloodResult)
			tot := r.Total
			rep.Logf("%s: %+v", r.Label, tot)
			if r.Error != "" {
				rep.Errorf("%s: %s", r.Label, r.Error)
			}
			if r.Size != want.size || tot.SentPackets != want.packets || tot.SentBytes != want.packets*uint64(want.size) {
				rep.Errorf("%s: size %d, sent %d packets %d bytes; want %d and %d", r.Label, r.Size, tot.SentPackets, tot.SentBytes, want.packets, want.packets*uint64(want.size))
			}
			if tot.LostPackets != 0 || tot.ReceivedPackets != tot.SentPackets || tot.LossFraction != 0 || tot.Refused != 0 || tot.ReceiverDrops != 0 {
				rep.Errorf("%s: loss on loopback: %+v", r.Label, tot)
			}
			if tot.Reordered != 0 || tot.Duplicates != 0 || tot.CEMarked != 0 {
				rep.Errorf("%s: reordered %d duplicates %d CE-marked %d on loopback", r.Label, tot.Reordered, tot.Duplicates, tot.CEMarked)
			}
			for _, v := range []struct {
				name string
				rate float64
			}{{"sent", tot.SentRate}, {"received", tot.ReceivedRate}} {
				if math.Abs(v.rate-want.rate) > 0.03*want.rate {
					rep.Errorf("%s: %s rate %.4g bit/s, want %.4g ± 3%%", r.Label, v.name, v.rate, want.rate)
				}
			}
			if tot.OWDMin <= 0 || tot.OWDMean < tot.OWDMin || tot.OWDMax < tot.OWDMean || tot.Jitter < 0 {
				rep.Errorf("%s: owd min %v mean %v max %v jitter %v", r.Label, tot.OWDMin, tot.OWDMean, tot.OWDMax, tot.Jitter)
			}
			// The steps add up to the totals.
			var sent, rcvd, bytes, lost uint64
			var rates []float64
			for j, s := range r.Steps {
				sent += s.SentPackets
				rcvd += s.ReceivedPackets
				bytes += s.ReceivedBytes
				lost += s.LostPackets
				if j > 0 && s.T <= r.Steps[j-1].T || s.Interval <= 0 {
					rep.Errorf("%s: step %d at %v, interval %v", r.Label, j, s.T, s.Interval)
				}
				if at := s.T.Sub(res.T0); at > r.Start+100*time.Millisecond && at <= r.Stop {
					rates = append(rates, float64(s.ReceivedBytes)*8/s.Interval.Seconds())
				}
			}
			if sent != tot.SentPackets || rcvd != tot.ReceivedPackets || bytes != tot.ReceivedBytes || lost != 0 {
				rep.Errorf("%s: steps sum to %d sent, %d received (%d bytes), %d lost; totals %d, %d (%d)", r.Label, sent, rcvd, bytes, lost, tot.SentPackets, tot.ReceivedPackets, tot.ReceivedBytes)
			}
			slices.Sort(rates)
			if med := rates[len(rates)/2]; math.Abs(med-want.rate) > 0.05*want.rate {
				rep.Errorf("%s: median step rate %.4g bit/s, want %.4g ± 5%%", r.Label, med, want.rate)
			}
			first, last := r.Steps[0].T.Sub(res.T0), r.Steps[len(r.Steps)-1].T.Sub(res.T0)
			if first < r.Start || first > r.Start+100*time.Millisecond || last < r.Stop {
				rep.Errorf("%s: steps from %v to %v for a flow from %v to %v", r.Label, first, last, r.Start, r.Stop)
			}
		}
	})
}

// The sender's batch write allocates nothing: a packet costs its share of
// a sendmmsg(2), no more.
func BenchmarkFloodBatchWrite(b *testing.B) {
	rcv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: lo4.AsSlice()})
	if err != nil {
		b.Fatal(err)
	}
	defer rcv.Close()
	snd, err := net.DialUDP("udp4", nil, rcv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer snd.Close()
	bufs := make([][]byte, floodBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 1470)
	}
	w, err := newBatchWriter(snd, bufs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(floodBatch * 1470)
	var seq uint64
	for b.Loop() {
		for i := range bufs {
			putFlood(bufs[i], 1, seq, clock.Time(seq))
			seq++
		}
		// Nobody reads: the receiving socket drops what overflows, which
		// costs the sender nothing.
		if _, err := w.write(floodBatch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/packet")
}

// The receiver counts the packets that arrive marked CE. Nothing on
// loopback marks, so the sender marks them itself (TOS 0x03 is CE), every
// second one of two floods: the count must be exact.
func TestFloodCountsCE(t *testing.T) {
	noLeaks(t)
	c, s := loopback(lo4)
	ce := traffictest.Must(t, NewFlood, FloodConfig{Label: "ce", Client: c, Server: s, Rate: 1e6, Size: 500, TOS: 0x20 | 3, Stop: 200 * time.Millisecond})
	ect := traffictest.Must(t, NewFlood, FloodConfig{Label: "ect", Client: c, Server: s, Rate: 1e6, Size: 500, TOS: 0x20 | 2, Stop: 200 * time.Millisecond})
	res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: 300 * time.Millisecond, Flows: []Flow{ce, ect}})
	if err != nil {
		t.Fatal(err)
	}
	// 500·8/1e6 = 4 ms a packet: 50 in 200 ms.
	for i, want := range []uint64{50, 0} {
		r := res.Flows[i].(*FloodResult)
		var steps uint64
		for _, s := range r.Steps {
			steps += s.CEMarked
		}
		if r.Total.ReceivedPackets != 50 || r.Total.CEMarked != want || steps != want {
			t.Errorf("%s: %d received, %d CE-marked (steps %d), want 50 and %d", r.Label, r.Total.ReceivedPackets, r.Total.CEMarked, steps, want)
		}
	}
}
