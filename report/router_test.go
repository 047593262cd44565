package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"wanlab/fidelity"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/router"
)

// TestReadRouterLayouts reads router data in the layouts the report must
// understand, and in ones it must survive.
func TestReadRouterLayouts(t *testing.T) {
	for _, c := range []struct {
		name  string
		raw   string
		state fidelityState
		check func(t *testing.T, v routerView)
	}{
		{name: "absent", raw: ``, state: stateAbsent},
		{name: "null", raw: ` null `, state: stateAbsent},
		{name: "not JSON", raw: `{"up": [`, state: stateUnknown, check: func(t *testing.T, v routerView) {
			if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "not readable JSON") {
				t.Errorf("notes %q", v.Notes)
			}
		}},
		{name: "not an object", raw: `[1, 2]`, state: stateUnknown},
		{name: "run report, faithful", raw: string(synthRouter(faithfulRun, "netem delay 20ms")), state: stateFaithful, check: func(t *testing.T, v routerView) {
			if len(v.Directions) != 2 || v.Directions[0].Name != "up" || v.Directions[1].Name != "down" {
				t.Fatalf("directions %+v", v.Directions)
			}
			d := v.Directions[0]
			want := map[string]*float64{"rate": d.AchievedRateBps, "min": d.DelayMinNs, "p99": d.LatenessP99Ns, "ring": d.RingDrops, "loss": d.LossDrops}
			for k, p := range want {
				if p == nil {
					t.Errorf("%s not read", k)
				}
			}
			if *d.AchievedRateBps != 9_561_000 || *d.DelayMinNs != 20.01e6 || *d.LatenessP99Ns != 40e3 || *d.RingDrops != 0 || *d.LossDrops != 0 {
				t.Errorf("figures %v %v %v %v %v", *d.AchievedRateBps, *d.DelayMinNs, *d.LatenessP99Ns, *d.RingDrops, *d.LossDrops)
			}
			if d.Verdict == nil || !d.Verdict.Faithful || d.Verdict.ToleranceNs != int64(time.Millisecond) {
				t.Errorf("verdict %+v", d.Verdict)
			}
			if d.ChainEnd != "" {
				t.Errorf("an unchanged chain has an end %q", d.ChainEnd)
			}
		}},
		{name: "run report, ring drops", raw: string(synthRouter(ringDropsDown, "netem delay 20ms")), state: stateUnfaithful, check: func(t *testing.T, v routerView) {
			if len(v.Verdicts) != 2 || v.Verdicts[1].Faithful || v.Verdicts[1].Causes[0].Code != "ring_drops" {
				t.Errorf("verdicts %+v", v.Verdicts)
			}
		}},
		{
			// The router snapshot's layout: directions as "up" and "down",
			// counters and ring nested, delays in ns, and the verdicts in
			// a list of their own.
			name: "snapshot layout",
			raw: `{"clock_ns": 5, "wall": "2026-01-01T00:00:00Z", "future_key": {"x": [1, 2]},
				"up": {"chain": "netem delay 10ms loss 1%", "counters": {"sent": 1000, "dropped": 12, "dropped_by_reason": {"loss": 10, "limit": 2},
				        "delay": {"n": 988, "min_ns": 10000000, "p50_ns": 10500000, "mean_ns": 10600000, "p99_ns": 12000000, "max_ns": 13000000, "exact": false}},
				       "lateness": {"n": 988, "p50_ns": 1000, "p99_ns": 2500000, "max_ns": 4000000}, "ring": {"size": 1024, "drops": 0}},
				"down": {"chain": "", "counters": {"sent": 0, "dropped": 0, "delay": {"n": 0, "min_ns": 0}}, "ring": {"drops": 3}},
				"fidelity": {"verdicts": [
					{"direction": "up", "faithful": false, "tolerance_ns": 1000000, "causes": [{"code": "late_releases", "text": "late"}]},
					{"direction": "down", "faithful": false, "tolerance_ns": 1000000, "causes": [{"code": "ring_drops", "text": "ring"}], "extra": true}]}}`,
			state: stateUnfaithful,
			check: func(t *testing.T, v routerView) {
				if len(v.Directions) != 2 {
					t.Fatalf("directions %+v", v.Directions)
				}
				up, down := v.Directions[0], v.Directions[1]
				if up.Name != "up" || *up.Sent != 1000 || *up.LossDrops != 10 || *up.DelayP50Ns != 10.5e6 || *up.LatenessP99Ns != 2.5e6 || *up.RingDrops != 0 {
					t.Errorf("up %+v", up)
				}
				if up.Verdict == nil || up.Verdict.Causes[0].Code != "late_releases" {
					t.Errorf("up verdict %+v", up.Verdict)
				}
				if down.DelayMinNs != nil {
					t.Errorf("a direction that delivered nothing has a delay %v", *down.DelayMinNs)
				}
				if down.LossDrops == nil || *down.LossDrops != 0 || *down.RingDrops != 3 {
					t.Errorf("down %+v", down)
				}
			},
		},
		{name: "overall only", raw: `{"faithful": true}`, state: stateFaithful},
		{name: "overall false without verdicts", raw: `{"faithful": false}`, state: stateUnfaithful},
		{
			// An overall "faithful" that disagrees with a direction's
			// verdict: the report believes the unfaithful one.
			name:  "disagreement",
			raw:   `{"faithful": true, "directions": [{"name": "up", "verdict": {"direction": "up", "faithful": false}}]}`,
			state: stateUnfaithful,
		},
		{name: "wrong types", raw: `{"faithful": "yes", "directions": [{"name": "up", "load_rate_bps": "fast", "lateness": 3}]}`, state: stateUnknown, check: func(t *testing.T, v routerView) {
			if len(v.Directions) != 1 || v.Directions[0].AchievedRateBps != nil || v.Directions[0].LatenessP99Ns != nil {
				t.Errorf("figures read from values of the wrong type: %+v", v.Directions)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := readRouter(json.RawMessage(c.raw))
			if v.State != c.state {
				t.Errorf("state %s, want %s", v.State, c.state)
			}
			if c.check != nil {
				c.check(t, v)
			}
		})
	}
}

// TestReadConfigured: what a chain asks for, as the fidelity table shows
// it beside what the router achieved.
func TestReadConfigured(t *testing.T) {
	for _, c := range []struct {
		chain string
		want  configured
		ok    bool
	}{
		{"", configured{}, true},
		{"netem delay 20ms; tbf rate 10mbit burst 32k latency 300ms", configured{RateBps: 10_000_000, Delay: 20 * time.Millisecond}, true},
		{"netem delay 5ms loss 10%; netem delay 7ms rate 2mbit loss 10%", configured{RateBps: 2_000_000, Delay: 12 * time.Millisecond, Loss: 0.19}, true},
		{"netem loss state 0.01", configured{LossModel: "state"}, true},
		{"netem delay 10ms 2ms distribution mytable", configured{}, false},
	} {
		got, ok := readConfigured(c.chain)
		if ok != c.ok || got.RateBps != c.want.RateBps || got.Delay != c.want.Delay || got.LossModel != c.want.LossModel ||
			got.Loss < c.want.Loss-1e-9 || got.Loss > c.want.Loss+1e-9 {
			t.Errorf("%q: %+v %v, want %+v %v", c.chain, got, ok, c.want, c.ok)
		}
	}
}

// TestReadRouterSnapshot reads the JSON of the router's own snapshot type
// (as `wanlab status --json` gives it), with fidelity verdicts beside it:
// the report must find each figure where the router puts it.
func TestReadRouterSnapshot(t *testing.T) {
	var reasons link.Reasons
	reasons[qdisc.ReasonLoss], reasons[qdisc.ReasonLimit] = 40, 2
	snap := router.Snapshot{
		Up: router.DirSnapshot{
			Name: "up", Chain: "netem delay 10ms loss 4%",
			Counters: link.Counters{Sent: 1000, Delivered: 958, Dropped: 42, DroppedByReason: reasons,
				Delay: link.Delay{N: 958, Min: 10e6, Mean: 10.2e6, P50: 10.1e6, P99: 11e6, Max: 12e6}},
			Lateness: router.Lateness{N: 958, P50Ns: 900, P99Ns: 2_500_000, MaxNs: 3_000_000},
			Ring:     router.RingSnapshot{Size: 1024, Drops: 0},
		},
		Down: router.DirSnapshot{Name: "down", Ring: router.RingSnapshot{Size: 1024, Drops: 5}},
	}
	verdicts := []fidelity.Verdict{
		fidelity.Judge(fidelity.Direction{Name: "up", Releases: 958, LatenessP99: 2500 * time.Microsecond}, 10*time.Millisecond),
		fidelity.Judge(fidelity.Direction{Name: "down", RingDrops: 5}, 10*time.Millisecond),
	}
	raw, err := json.Marshal(struct {
		router.Snapshot
		Verdicts []fidelity.Verdict `json:"verdicts"`
	}{snap, verdicts})
	if err != nil {
		t.Fatal(err)
	}
	v := readRouter(raw)
	if v.State != stateUnfaithful || len(v.Directions) != 2 || len(v.Verdicts) != 2 {
		t.Fatalf("state %s, %d directions, %d verdicts", v.State, len(v.Directions), len(v.Verdicts))
	}
	up, down := v.Directions[0], v.Directions[1]
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"up sent": {up.Sent, 1000}, "up dropped": {up.Dropped, 42}, "up loss drops": {up.LossDrops, 40},
		"up delay min": {up.DelayMinNs, 10e6}, "up delay median": {up.DelayP50Ns, 10.1e6}, "up delay mean": {up.DelayMeanNs, 10.2e6},
		"up lateness p99": {up.LatenessP99Ns, 2.5e6}, "up ring drops": {up.RingDrops, 0}, "down ring drops": {down.RingDrops, 5},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s: %v, want %v", name, c.got, c.want)
		}
	}
	if up.Chain != "netem delay 10ms loss 4%" || up.Verdict == nil || up.Verdict.Causes[0].Code != "late_releases" ||
		down.Verdict == nil || down.Verdict.Causes[0].Code != "ring_drops" {
		t.Errorf("up %q %+v, down %+v", up.Chain, up.Verdict, down.Verdict)
	}
	if down.DelayMinNs != nil {
		t.Error("a direction that delivered nothing has a delay")
	}
}
