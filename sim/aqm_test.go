package sim

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"wanlab/link"
	"wanlab/tcspec"
)

// These tests drive the queues people deploy today through wanlab sim, with
// numbers that follow from the kernel's code: cake's overhead arithmetic,
// its host isolation and its tins, and fq_pie's flow isolation.

// aqmRun simulates flows through chain in the up direction for d and
// returns the result.
func aqmRun(t *testing.T, chain string, d time.Duration, flows ...Flow) *Result {
	t.Helper()
	specs, err := tcspec.ParseChain(chain, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Duration: d, Up: link.Config{Chain: specs}, Flows: flows, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// cake's overhead replaces the device's header: with `overhead 18 mpu 64`
// a packet costs its IP length + 18 bytes of the shaper's time, so 1000-
// byte IP packets leave at 10 Mbit/s × 1000/1018 (sch_cake.c,
// cake_overhead; tbf's overhead would add to the 14 bytes it already
// counts).
func TestCakeOverheadSetsTheRate(t *testing.T) {
	res := aqmRun(t, "cake bandwidth 10mbit overhead 18 mpu 64", 5*time.Second, CBR{Rate: mbit(12), Size: 1000})
	got := float64(res.Flows[0].Delivered) * 1000 * 8 / 5 / 1e6
	want := 10 * 1000.0 / 1018
	t.Logf("IP throughput %.4f Mbit/s, want %.4f", got, want)
	// The queue's own backlog at the end is not delivered: a few packets
	// within 0.5 %.
	if math.Abs(got-want)/want > 0.005 {
		t.Errorf("IP throughput %.4f Mbit/s, want %.4f within 0.5 %%", got, want)
	}
}

// triple-isolate shares the link between hosts first: a client with one
// flow and a client with eight, each flow to a server of its own, get half
// each (cake_dequeue divides a flow's quantum by the larger of its source
// and its destination host's bulk flow counts), where flow fairness alone
// would give the first a ninth. (Had all nine flows one destination, that
// host's count of 9 would divide every flow's quantum alike.)
func TestCakeTripleIsolateSharesByHost(t *testing.T) {
	flows := []Flow{CBR{Rate: mbit(10), Size: 1500, Src: addr("10.0.0.2"), Dst: addr("10.0.1.10")}}
	for i := range 8 {
		flows = append(flows, CBR{Rate: mbit(2), Size: 1500, Src: addr("10.0.0.3"), Dst: netip.AddrFrom4([4]byte{10, 0, 1, byte(20 + i)})})
	}
	for _, c := range []struct {
		mode   string
		shareA float64
	}{{"triple-isolate", 0.5}, {"flows", 1.0 / 9}} {
		res := aqmRun(t, "cake bandwidth 10mbit "+c.mode, 5*time.Second, flows...)
		var a, b float64
		for i, f := range res.Flows {
			if i == 0 {
				a += float64(f.BytesOut)
			} else {
				b += float64(f.BytesOut)
			}
		}
		t.Logf("%s: the one-flow host got %.4f of the link", c.mode, a/(a+b))
		if got := a / (a + b); math.Abs(got-c.shareA) > 0.05*c.shareA {
			t.Errorf("%s: the one-flow host got %.3f of the link, want %.3f within 5 %%", c.mode, got, c.shareA)
		}
	}
}

// diffserv4 puts EF in its voice tin, which the soft priority scheduler
// serves first up to its threshold (a quarter of the rate): an EF flow's
// packets wait a few ms at most beside a best-effort flood.
func TestCakeDiffserv4VoiceTin(t *testing.T) {
	res := aqmRun(t, "cake bandwidth 10mbit diffserv4", 5*time.Second,
		CBR{Rate: mbit(15), Size: 1500},
		Poisson{Rate: mbit(0.5), Size: 200, TOS: 0xb8})
	ef := res.Flows[1]
	t.Logf("EF p99 %v, flood median %v", time.Duration(ef.Delay.P99), time.Duration(res.Flows[0].Delay.P50))
	if p99 := time.Duration(ef.Delay.P99); ef.Dropped != 0 || p99 > 5*time.Millisecond {
		t.Errorf("EF flow: dropped %d, p99 delay %v; want none and under 5 ms", ef.Dropped, p99)
	}
	if be := time.Duration(res.Flows[0].Delay.P50); be < 5*time.Millisecond {
		t.Errorf("the flood's median delay %v: the best-effort tin should be queueing", be)
	}
}

// fq_pie gives each flow its own queue and PIE: a sparse flow's packets (a
// probe every 20 ms) go to the new flows' list and wait behind at most the
// packet the tbf holds, beside eight flows that overload the link. (A flow
// whose packets come closer together than the old list's round, 8 × 1514
// bytes here, waits that round, as in fq_codel.)
func TestFQPIESparseFlow(t *testing.T) {
	flows := []Flow{CBR{Rate: mbit(0.04), Size: 100}}
	for range 8 {
		flows = append(flows, CBR{Rate: mbit(1.5), Size: 1500})
	}
	res := aqmRun(t, "tbf rate 10mbit burst 32k latency 50ms; fq_pie", 10*time.Second, flows...)
	sparse := res.Flows[0]
	t.Logf("sparse p99 %v, bulk median %v", time.Duration(sparse.Delay.P99), time.Duration(res.Flows[1].Delay.P50))
	if p99 := time.Duration(sparse.Delay.P99); sparse.Dropped != 0 || p99 > 5*time.Millisecond {
		t.Errorf("sparse flow: dropped %d, p99 delay %v; want none and under 5 ms", sparse.Dropped, p99)
	}
	if bulk := time.Duration(res.Flows[1].Delay.P50); bulk < 5*time.Millisecond {
		t.Errorf("a bulk flow's median delay %v: the bulk flows should be queueing", bulk)
	}
}
