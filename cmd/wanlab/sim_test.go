package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runWanlab(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

type simJSON struct {
	Up struct {
		Sent, Delivered, Dropped uint64
		ThroughputBps            float64 `json:"throughput_bps"`
		Delay                    struct {
			N   uint64
			Min float64 `json:"min_ns"`
			P50 float64 `json:"p50_ns"`
			P99 float64 `json:"p99_ns"`
			Max float64 `json:"max_ns"`
		}
		DroppedByReason map[string]uint64 `json:"dropped_by_reason"`
	}
	Down struct {
		Sent uint64
	}
	Flows []struct {
		Flow      int
		Dir       string
		Delivered uint64
	}
}

func simRun(t *testing.T, args ...string) simJSON {
	t.Helper()
	out, errOut, code := runWanlab(t, append([]string{"sim", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("wanlab sim %v: exit %d: %s", args, code, errOut)
	}
	var r simJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	return r
}

// The README's main example: a constant 50 ms delay gives a p50 of 50.0 ms.
func TestSimConstantDelay(t *testing.T) {
	r := simRun(t, "--both", "netem delay 50ms", "--flow", "cbr rate=10mbit size=1500", "--duration", "10s")
	if r.Up.Delay.N == 0 || r.Up.Delay.P50 != 50e6 || r.Up.Delay.Max != 50e6 {
		t.Fatalf("delay = %+v, want p50 = max = 50.0 ms", r.Up.Delay)
	}
	if r.Down.Sent != 0 {
		t.Errorf("down sent %d packets; the only flow is up", r.Down.Sent)
	}
	got := r.Up.ThroughputBps
	// 10 Mbit/s of 1500-byte IP packets for 10 s, less the 50 ms still in
	// flight at the end, counted with their 14-byte Ethernet headers.
	if want := 9.95e6 * 1514 / 1500; math.Abs(got-want) > 0.01e6 {
		t.Errorf("throughput = %.0f bit/s, want %.0f", got, want)
	}
}

// With a rate, serialisation adds to the delay: a 1500-byte IP packet is
// 1514 bytes on Ethernet, 0.6056 ms at 20 Mbit/s.
func TestSimDelayWithRate(t *testing.T) {
	r := simRun(t, "--up", "netem delay 50ms rate 20mbit", "--flow", "cbr rate=10mbit size=1500", "--duration", "2s")
	if r.Up.Delay.N == 0 || r.Up.Delay.P50 != 50.6056e6 {
		t.Fatalf("delay = %+v, want p50 = 50.6056 ms (50 ms + 1514 B at 20 Mbit/s)", r.Up.Delay)
	}
}

func TestSimLossIsCounted(t *testing.T) {
	r := simRun(t, "--up", "netem loss 10%", "--flow", "cbr rate=100mbit size=1000", "--duration", "2s", "--seed", "7")
	ratio := float64(r.Up.Dropped) / float64(r.Up.Sent)
	if math.Abs(ratio-0.10) > 0.01 {
		t.Fatalf("loss ratio %.4f, want 0.10 ± 0.01", ratio)
	}
	if r.Up.DroppedByReason["loss"] != r.Up.Dropped {
		t.Errorf("drops by reason %v do not add up to %d", r.Up.DroppedByReason, r.Up.Dropped)
	}
}

func TestSimSeedReproducible(t *testing.T) {
	args := []string{"--up", "netem delay 20ms 5ms loss 2%", "--flow", "poisson rate=5mbit size=800", "--duration", "1s", "--seed", "42"}
	a, _, _ := runWanlab(t, append([]string{"sim", "--json"}, args...)...)
	b, _, _ := runWanlab(t, append([]string{"sim", "--json"}, args...)...)
	if a != b || a == "" {
		t.Fatal("two runs with the same seed differ")
	}
}

func TestSimEventsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ev.csv")
	r := simRun(t, "--up", "netem loss 20%", "--flow", "cbr rate=1mbit size=1000 count=50", "--duration", "1s", "--events", path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if lines[0] != "flow,seq,dir,size,sent_ns,left_ns,verdict" {
		t.Fatalf("header %q", lines[0])
	}
	if len(lines)-1 != 50 {
		t.Fatalf("%d rows, want 50", len(lines)-1)
	}
	dropped := 0
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != 7 {
			t.Fatalf("row %q has %d fields", l, len(f))
		}
		if strings.HasPrefix(f[6], "dropped:") {
			dropped++
			if f[5] != "" {
				t.Errorf("dropped row %q has a left_ns", l)
			}
		}
	}
	if uint64(dropped) != r.Up.Dropped {
		t.Errorf("%d dropped rows, JSON says %d", dropped, r.Up.Dropped)
	}
}

func TestSimBadInput(t *testing.T) {
	checkUsageLine(t, []string{"sim"}, []usageCase{
		{[]string{"--up", "netem delay 10mz"}, "10mz"},
		{[]string{"--up", "netem gap 5 delay 10ms"}, "reorder"},
		{[]string{"--both", "netem delay 1ms", "--up", "netem delay 2ms"}, "--both"},
		{[]string{"--flow", "cbr size=1500"}, "rate"},
		{[]string{"--up", "fq_codel; netem delay 1ms"}, "child"},
		{[]string{"--duration", "0s"}, "positive"},
		{[]string{"--nonsense"}, "nonsense"},
	})
}

// A user distribution file, as tc reads from /usr/lib/tc/NAME.dist: here a
// two-point table (-1σ or +1σ), so every delay is 40 or 60 ms.
func TestSimUserDistributionFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "twopoint.dist")
	if err := os.WriteFile(path, []byte("# two points\n-8192 8192\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := simRun(t, "--up", "netem delay 50ms 10ms distribution "+path, "--flow", "cbr rate=1mbit size=500", "--duration", "2s")
	if d := r.Up.Delay; d.N == 0 || d.Min != 40e6 || d.Max != 60e6 {
		t.Fatalf("delay %+v, want min 40 and max 60 ms", d)
	}
	// Looked up by name in $TC_LIB_DIR, as tc does.
	t.Setenv("TC_LIB_DIR", dir)
	r = simRun(t, "--up", "netem delay 50ms 10ms distribution twopoint", "--flow", "cbr rate=1mbit size=500", "--duration", "2s")
	if d := r.Up.Delay; d.N == 0 || d.Min != 40e6 || d.Max != 60e6 {
		t.Fatalf("by name: delay %+v, want min 40 and max 60 ms", d)
	}
	_, errOut, code := runWanlab(t, "sim", "--up", "netem delay 50ms 10ms distribution nosuch")
	if code != 2 || !strings.Contains(errOut, "nosuch") {
		t.Fatalf("missing table: exit %d, %q", code, errOut)
	}
}

// TestFlagValueErrorsNameTheFix: a value a flag's type cannot take is
// reported with the flag, the value and what to give, not pflag's parser
// message.
func TestFlagValueErrorsNameTheFix(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--seed", "-1"}, `--seed "-1": give a whole number from 0 up`},
		{[]string{"sim", "--duration", "x"}, `--duration "x": give a duration with its unit`},
		{[]string{"sim", "--json=maybe"}, `--json "maybe": give true or false`},
		{[]string{"run", "--streams", "x"}, `--streams "x": give a whole number`},
	} {
		_, errOut, code := runWanlab(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "strconv") {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestSimFlagBounds: numeric flags out of their range exit 2 naming the
// range, 0 included (it would silently mean the default), before anything
// is simulated or written.
func TestSimFlagBounds(t *testing.T) {
	checkUsageLine(t, []string{"sim", "--flow", "cbr rate=1mbit size=1000 count=5", "--duration", "1s"}, []usageCase{
		{[]string{"--mtu", "0"}, "--mtu 0: give 68 to 65535"},
		{[]string{"--mtu", "67"}, "--mtu 67: give 68 to 65535"},
		{[]string{"--mtu", "-1500"}, "--mtu -1500: give 68 to 65535"},
		{[]string{"--mtu", "65536"}, "--mtu 65536: give 68 to 65535"},
		{[]string{"--txqueuelen", "0"}, "--txqueuelen 0: give 1 to 4294967295"},
		{[]string{"--txqueuelen", "-1"}, "--txqueuelen -1: give 1 to 4294967295"},
		{[]string{"--txqueuelen", "4294967296"}, "--txqueuelen 4294967296: give 1 to 4294967295"},
		{[]string{"--duration", "0s"}, "--duration 0s must be positive"},
		{[]string{"--duration", "-1s"}, "--duration -1s must be positive"},
		// Both to stdout would interleave CSV rows and JSON.
		{[]string{"--events", "-", "--json"}, "--events - and --json both write to stdout"},
	})
}

// A dumbbell's bad input exits 2 with one line that names the problem
// and the fix.
func TestSimHostsBadInput(t *testing.T) {
	checkUsageLine(t, []string{"sim"}, []usageCase{
		{[]string{"--clients", "17"}, "--clients 17: give 1 to 16 hosts"},
		{[]string{"--servers", "0"}, "--servers 0: give 1 to 16 hosts"},
		{[]string{"--clients", "4", "--flow", "cbr rate=1mbit size=1500 src=c5 dst=s1"}, "src=c5: there are 4 clients (c1..c4); name one of them, or give more clients (--clients 4 --servers 1)"},
		{[]string{"--flow", "cbr rate=1mbit size=1500 src=c17"}, "numbered 1 to 16"},
		{[]string{"--access-up", "c2=netem delay 40ms"}, `--access-up "c2=netem delay 40ms": c2: there is one client (c1); name it, or give more clients (--clients 1 --servers 1)`},
		{[]string{"--access-down", "h1=netem delay 4ms"}, `host "h1" is not a host name`},
		{[]string{"--access-up", "netem delay 4ms"}, "is not HOST=CHAIN"},
		{[]string{"--clients", "2", "--access-up", "c2=netem delay 4mz"}, "4mz"},
		{[]string{"--clients", "2", "--access-up", "c2=fq_codel; netem delay 1ms"}, "child"},
		{[]string{"--access-up", "c1=netem delay 1ms", "--access-up", "c1=netem delay 2ms"}, "keep one"},
	})
}

// The dumbbell from the command line: two clients 10 ms and 40 ms from a
// bottleneck that is never busy (see sim.TestDumbbellHosts), each
// sending to s1: their flows' delays are their access links'.
func TestSimHosts(t *testing.T) {
	args := []string{"--clients", "2", "--up", "tbf rate 10mbit burst 1514 limit 100000",
		"--access-up", "c1=netem delay 10ms", "--access-up", "c2=netem delay 40ms",
		"--flow", "cbr rate=1mbit size=1500 src=c1 dst=s1", "--flow", "cbr rate=1mbit size=1500 src=c2 dst=s1", "--duration", "1s"}
	out, errOut, code := runWanlab(t, append([]string{"sim", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Hosts []struct {
			Host     string
			UpAccess *struct {
				Delay struct {
					Max float64 `json:"max_ns"`
				}
			} `json:"up_access"`
		}
		Flows []struct {
			Delay struct {
				Min float64 `json:"min_ns"`
				Max float64 `json:"max_ns"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Hosts) != 3 || r.Hosts[1].Host != "c2" || r.Hosts[1].UpAccess == nil || r.Hosts[1].UpAccess.Delay.Max != 40e6 || r.Hosts[2].UpAccess != nil {
		t.Errorf("hosts %+v", r.Hosts)
	}
	if len(r.Flows) != 2 || r.Flows[0].Delay.Min != 10e6 || r.Flows[0].Delay.Max != 10e6 || r.Flows[1].Delay.Min != 40e6 || r.Flows[1].Delay.Max != 40e6 {
		t.Errorf("flows %+v", r.Flows)
	}
	text, _, code := runWanlab(t, append([]string{"sim"}, args...)...)
	for _, want := range []string{"c2 access up: netem limit 1000 delay 40ms", "up bottleneck", "c2 up access", "s1 up"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("text output has no %q:\n%s", want, text)
		}
	}
}

// The README's dumbbell: two clients 10 ms and 40 ms from a shared
// 10 Mbit/s bottleneck that 12 Mbit/s of Poisson traffic overloads. Each
// packet waits only in the bottleneck, so a client's mean end-to-end
// delay is its access delay plus the bottleneck's mean wait for its
// packets, which is the same for both (they share one queue) up to the
// chance of when each arrives; and both lose about as much.
func TestSimHostsREADME(t *testing.T) {
	out, errOut, code := runWanlab(t, "sim", "--json", "--clients", "2", "--up", "tbf rate 10mbit burst 1514 limit 30000",
		"--access-up", "c1=netem delay 10ms", "--access-up", "c2=netem delay 40ms",
		"--flow", "poisson rate=6mbit size=1500 src=c1 dst=s1", "--flow", "poisson rate=6mbit size=1500 src=c2 dst=s1", "--duration", "10s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	type counters struct {
		Dropped uint64
		Delay   struct {
			Mean float64 `json:"mean_ns"`
		}
	}
	var r struct {
		UpBottleneck counters `json:"up_bottleneck"`
		Flows        []counters
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	wait := r.UpBottleneck.Delay.Mean
	if len(r.Flows) != 2 || wait < 10e6 || r.UpBottleneck.Dropped == 0 {
		t.Fatalf("bottleneck %+v flows %+v: want an overloaded queue", r.UpBottleneck, r.Flows)
	}
	for i, access := range []float64{10e6, 40e6} {
		f := r.Flows[i]
		if got := f.Delay.Mean - access; math.Abs(got-wait) > 0.05*wait {
			t.Errorf("flow %d: mean delay %.3f ms less its access link's %.0f ms = %.3f ms; want the bottleneck's mean wait %.3f ms within 5%%",
				i, f.Delay.Mean/1e6, access/1e6, got/1e6, wait/1e6)
		}
		if share := float64(f.Dropped) / float64(r.UpBottleneck.Dropped); share < 0.4 || share > 0.6 {
			t.Errorf("flow %d lost %d of the %d drops; want about half", i, f.Dropped, r.UpBottleneck.Dropped)
		}
	}
}

// The README's note on phase: with constant-rate flows the same dumbbell
// loses only c2's packets, which always reach the full queue first.
func TestSimHostsPhase(t *testing.T) {
	out, errOut, code := runWanlab(t, "sim", "--json", "--clients", "2", "--up", "tbf rate 10mbit burst 1514 limit 30000",
		"--access-up", "c1=netem delay 10ms", "--access-up", "c2=netem delay 40ms",
		"--flow", "cbr rate=6mbit size=1500 src=c1 dst=s1", "--flow", "cbr rate=6mbit size=1500 src=c2 dst=s1", "--duration", "10s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct{ Flows []struct{ Dropped uint64 } }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Flows) != 2 || r.Flows[0].Dropped != 0 || r.Flows[1].Dropped == 0 {
		t.Errorf("flows %+v: want c1's none dropped and c2's some", r.Flows)
	}
}
