package testrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/lab"
	"wanlab/netns"
	"wanlab/results"
	"wanlab/tcspec"
)

// These are the figures the transports issue is done by, measured through
// the router in namespaces.

// e2Path is experiment E2's path at rate R: netem's 20 ms as the root and
// a token bucket with a 10 kB bucket and a 30 kB queue as its child, each
// way.
func e2Path(rate string) string {
	return "netem delay 20ms; tbf rate " + rate + " buffer 10000 limit 30000"
}

// tfrc_upload through E2's path at 2 Mbit/s: TFRC's goodput reaches 90 %
// of the rate over the load (1448 bytes of data ride in each 1514-byte
// frame the bucket counts, so the ceiling is 95.6 %), and the loss event
// rate stays below 1 % from 10 s on.
func TestAcceptanceTFRCUpload(t *testing.T) {
	roottest.Twice(t, "tfrc_upload", func(r roottest.Reporter) {
		o := Defaults()
		o.Test, o.Both = "tfrc_upload", e2Path("2mbit")
		o.Duration, o.Lead, o.Tail = dur(20*time.Second), dur(time.Second), dur(time.Second)
		d := runDoc(t, o)
		within(r, "TFRC upload mean", series(t, d, "TFRC upload").Summary.Mean, 1.8, 2)
		var maxP float64
		for _, s := range series(t, d, "TFRC upload::tfrc_p").Samples {
			if s.T > d.Run.LeadS+10 {
				maxP = max(maxP, s.V)
			}
		}
		within(r, "largest loss event rate after 10 s (%)", maxP, 0, 1)
		if lost := series(t, d, "TFRC upload::tfrc_lost"); lost.Summary.Max == 0 {
			r.Errorf("no packet lost: the bucket's 30 kB queue should have overflowed at least once")
		}
		checkRouterBytes(r, t, d, "TFRC upload", "TFRC upload::tfrc_recv_rate", 0, 0.01)
		if d.Run.Options["tx_qlen"] != "5" {
			r.Errorf("options %v: want tx_qlen 5", d.Run.Options)
		}
	})
}

// quic_upload through a 20 Mbit/s bucket with 20 ms each way reaches 85 %
// of the rate.
func TestAcceptanceQUICUpload(t *testing.T) {
	roottest.Twice(t, "quic_upload", func(r roottest.Reporter) {
		o := Defaults()
		o.Test = "quic_upload"
		o.Up, o.Down = "netem delay 20ms; tbf rate 20mbit burst 32k latency 50ms", "netem delay 20ms"
		o.Duration, o.Lead, o.Tail = dur(10*time.Second), dur(time.Second), dur(time.Second)
		d := runDoc(t, o)
		within(r, "QUIC upload mean", series(t, d, "QUIC upload").Summary.Mean, 17, 20)
		within(r, "quic_rtt median", series(t, d, "QUIC upload::quic_rtt").Summary.Median, 40, 100)
		if f := d.Flows[0]; f.CongestionControl != "newreno" {
			r.Errorf("flow %+v: want quic-go's newreno", f)
		}
	})
}

// runCustom prepares and runs a custom test and returns its document or
// error; nothing the run built may be left.
func runCustom(t *testing.T, o Options) (*results.Document, []string, error) {
	t.Helper()
	roottest.NeedRoot(t)
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	var mu sync.Mutex
	var warnings []string
	doc, err := Run(context.Background(), s, Info{Argv: []string{"wanlab", "run", "custom"}, Version: "test"}, Hooks{
		Warnf: func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			w := strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(f, a...), "\n", " "))
			warnings = append(warnings, w)
			t.Logf("warning: %s", w)
		},
	})
	nothingLeft(t, s.Lab)
	return doc, warnings, err
}

// command returns the document's record of the server or client command.
func command(t *testing.T, d *results.Document, role string) results.Command {
	t.Helper()
	for _, c := range d.Commands {
		if c.Role == role {
			return c
		}
	}
	t.Fatalf("no %s command in %+v", role, d.Commands)
	return results.Command{}
}

// iperf3 as the user's program: the router's count of its data flow
// agrees with iperf3's own report within 2 %, as bytes and as throughput
// over iperf3's own interval; its control connection is a flow of its
// own, and wanlab's probes are not the user's flows.
func TestAcceptanceCustomIperf3(t *testing.T) {
	needIperf3(t)
	roottest.Twice(t, "custom iperf3", func(r roottest.Reporter) {
		o := Defaults()
		o.Test = "custom"
		o.Server = "iperf3 -s -1 -p @port"
		o.Client = "iperf3 -c @peer -p @port -t @duration -C cubic --json"
		o.Up, o.Down = "netem delay 10ms limit 10000; tbf rate 20mbit burst 32k latency 50ms", "netem delay 10ms"
		o.Duration, o.Lead, o.Tail = dur(8*time.Second), dur(time.Second), dur(3*time.Second)
		d, _, err := runCustom(t, o)
		if err != nil {
			t.Fatal(err)
		}
		if d.Run.Partial {
			r.Errorf("partial: %s", d.Run.PartialReason)
		}
		cl := command(t, d, "client")
		if cl.ExitCode != 0 || cl.Error != "" || cl.StartS < 0.99 {
			r.Errorf("client %+v", cl)
		}
		var ip struct {
			End struct {
				SumReceived struct {
					Bytes         float64 `json:"bytes"`
					Seconds       float64 `json:"seconds"`
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
		}
		if err := json.Unmarshal([]byte(cl.Stdout), &ip); err != nil || ip.End.SumReceived.Bytes == 0 {
			t.Fatalf("iperf3's report: %v\n%s", err, cl.Stdout)
		}
		// The data flow is the busiest of the user's flows up; the
		// control connection is another.
		var busiest string
		var most float64
		var user []string
		for _, f := range d.Flows {
			if strings.HasPrefix(f.Label, "Custom ") {
				user = append(user, f.FiveTuple)
				if !strings.HasPrefix(f.FiveTuple, "tcp ") || !strings.Contains(f.FiveTuple, ":"+d.Run.Options["port"]) {
					r.Errorf("flow %s: %s is not iperf3's", f.Label, f.FiveTuple)
				}
			}
			if f.Direction == "up" && strings.HasPrefix(f.Label, "Custom upload::") {
				if b := sum(series(t, d, f.Label)) * d.Run.StepS * 1e6 / 8; b > most {
					busiest, most = f.Label, b
				}
			}
		}
		if len(user) != 4 {
			r.Errorf("user's flows %q: want iperf3's control and data connections, each way", user)
		}
		ipBytes, ipRate := ip.End.SumReceived.Bytes, ip.End.SumReceived.BitsPerSecond/1e6
		routerRate := most * 8 / ip.End.SumReceived.Seconds / 1e6
		r.Logf("%s: router %.0f bytes, %.3f Mbit/s over iperf3's %.3f s; iperf3 %.0f bytes, %.3f Mbit/s; Custom upload mean %.3f Mbit/s",
			busiest, most, routerRate, ip.End.SumReceived.Seconds, ipBytes, ipRate, series(t, d, "Custom upload").Summary.Mean)
		if math.Abs(most-ipBytes) > 0.02*ipBytes || math.Abs(routerRate-ipRate) > 0.02*ipRate {
			r.Errorf("the router's %.0f bytes (%.3f Mbit/s) and iperf3's %.0f (%.3f Mbit/s) are more than 2%% apart", most, routerRate, ipBytes, ipRate)
		}
		within(r, "Custom upload mean", series(t, d, "Custom upload").Summary.Mean, 14, 19.6)
		if srv := command(t, d, "server"); srv.StartS >= 0 || srv.Error != "" || !strings.Contains(srv.Stdout, "Server listening on") {
			r.Errorf("server %+v", srv)
		}
	})
}

// A user's commands that misbehave end the run with a clear error, and
// what was measured is kept.
func TestCustomHostile(t *testing.T) {
	base := func(client string) Options {
		o := short("custom", time.Second)
		o.Client = client
		o.Both = "netem delay 5ms"
		return o
	}
	t.Run("client fails", func(t *testing.T) {
		d, _, err := runCustom(t, base("echo oops >&2; exit 3"))
		if err != nil {
			t.Fatal(err)
		}
		c := command(t, d, "client")
		if !d.Run.Partial || !strings.Contains(d.Run.PartialReason, "the client command exited with status 3") ||
			!strings.Contains(d.Run.PartialReason, "its last line: oops") || c.ExitCode != 3 || c.Stderr != "oops\n" {
			t.Errorf("partial %v %q; client %+v", d.Run.Partial, d.Run.PartialReason, c)
		}
		if n := series(t, d, "Ping (ms) ICMP").Summary.N + len(series(t, d, "Ping (ms) ICMP").Samples); n == 0 {
			t.Error("nothing measured before the client failed")
		}
	})
	t.Run("client not found", func(t *testing.T) {
		d, _, err := runCustom(t, base("wl-no-such-program --x"))
		if err != nil {
			t.Fatal(err)
		}
		if c := command(t, d, "client"); c.ExitCode != 127 || !strings.Contains(c.Error, "not found") {
			t.Errorf("client %+v", c)
		}
	})
	t.Run("client exits at once", func(t *testing.T) {
		d, warnings, err := runCustom(t, base("true"))
		if err != nil {
			t.Fatal(err)
		}
		if d.Run.Partial || command(t, d, "client").Error != "" {
			t.Errorf("partial %q, client %+v: a client that succeeds at once is no failure", d.Run.PartialReason, command(t, d, "client"))
		}
		if len(warnings) == 0 || !strings.Contains(warnings[0], "the client command exited") {
			t.Errorf("warnings %q: want one about the early exit", warnings)
		}
	})
	t.Run("client hangs", func(t *testing.T) {
		start := time.Now()
		d, _, err := runCustom(t, base("trap '' TERM; sleep 600"))
		if err != nil {
			t.Fatal(err)
		}
		c := command(t, d, "client")
		if !d.Run.Partial || !strings.Contains(d.Run.PartialReason, "still ran 5s after the load") || !c.EndedByWanlab || c.ExitCode != 128+9 {
			t.Errorf("partial %q; client %+v: want it ended by wanlab with SIGKILL after ignoring SIGTERM", d.Run.PartialReason, c)
		}
		// 0.4 s lead, 1 s load, 5 s of grace, 2 s from SIGTERM to SIGKILL.
		if el := time.Since(start); el > 15*time.Second {
			t.Errorf("the run took %v", el)
		}
	})
	t.Run("client prints megabytes", func(t *testing.T) {
		d, _, err := runCustom(t, base("head -c 20000000 /dev/zero | tr '\\000' x; echo; echo done >&2"))
		if err != nil {
			t.Fatal(err)
		}
		c := command(t, d, "client")
		if c.ExitCode != 0 || c.StdoutBytes != 20_000_001 || len(c.Stdout) > OutputLimit+100 || c.Stderr != "done\n" ||
			!strings.Contains(c.Stdout, "[wanlab: 19868929 bytes left out]") {
			t.Errorf("client: exit %d, %d bytes printed, %d kept, stderr %q", c.ExitCode, c.StdoutBytes, len(c.Stdout), c.Stderr)
		}
	})
	t.Run("server never listens", func(t *testing.T) {
		o := base("true")
		o.Server, o.ServerWait = "echo waiting; sleep 600", dur(time.Second)
		start := time.Now()
		_, _, err := runCustom(t, o)
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "did not listen on any new TCP or UDP port within --server-wait 1s") ||
			!strings.Contains(err.Error(), "its last line: waiting") {
			t.Errorf("error %v", err)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("the run took %v to give up", el)
		}
	})
	t.Run("server exits", func(t *testing.T) {
		o := base("true")
		o.Server = "exit 7"
		_, _, err := runCustom(t, o)
		if err == nil || !strings.Contains(err.Error(), "the server command exited with status 7 before it listened; it printed nothing") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("server fails during the run", func(t *testing.T) {
		o := short("custom", 3*time.Second)
		o.Both = "netem delay 5ms"
		o.Server, o.ServerWait, o.Client = "sleep 1; echo broke >&2; exit 4", dur(0), "sleep @duration"
		d, _, err := runCustom(t, o)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Run.Partial || !strings.Contains(d.Run.PartialReason, "the server command exited with status 4") ||
			!strings.Contains(d.Run.PartialReason, "broke") {
			t.Errorf("partial %v %q", d.Run.Partial, d.Run.PartialReason)
		}
		// The client was ended with the run, not counted as failing.
		if c := command(t, d, "client"); !c.EndedByWanlab || c.Error != "" {
			t.Errorf("client %+v", c)
		}
	})
}

// A server that daemonises (iperf3 -s -D, or setsid -f) exits with status
// 0 before it listens: the run waits for its port all the same, and ends
// the daemon at the end of the run, here on a borrowed testbed, whose
// removal would otherwise be the first to end it. A server that exits
// with status 0 and never listens is refused, saying so.
func TestCustomDaemonisingServer(t *testing.T) {
	needIperf3(t)
	roottest.NeedRoot(t)
	name := fmt.Sprintf("tcd%d", os.Getpid())
	chain, _ := tcspec.ParseChain("netem delay 5ms", tcspec.Options{})
	tb, err := lab.Up(context.Background(), lab.Options{Name: name, Up: chain, Down: chain})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	serverNS, err := tb.Namespace(lab.Server).ID()
	if err != nil {
		t.Fatal(err)
	}
	run := func(server string, wait time.Duration) (*results.Document, error) {
		o := short("custom", time.Second)
		o.Lab, o.Server, o.ServerWait = name, server, dur(wait)
		o.Client = "iperf3 -c @peer -p @port -t @duration"
		s, err := Prepare(o, tcspec.Options{})
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		return Run(context.Background(), s, Info{Argv: []string{"wanlab", "run", "custom"}, Version: "test"}, Hooks{
			Warnf: func(f string, a ...any) { t.Logf("warning: "+f, a...) }})
	}
	for _, server := range []string{
		"iperf3 -s -D -p @port",
		// The daemon listens well after the command has exited.
		"setsid -f sh -c 'sleep 0.5; exec iperf3 -s -p @port' </dev/null >/dev/null 2>&1",
	} {
		d, err := run(server, 2*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		srv, cl := command(t, d, "server"), command(t, d, "client")
		if d.Run.Partial || srv.ExitCode != 0 || srv.Error != "" || len(srv.DaemonPIDs) != 1 || cl.ExitCode != 0 {
			t.Errorf("%s: partial %v %q; server %+v; client exit %d", server, d.Run.Partial, d.Run.PartialReason, srv, cl.ExitCode)
		}
		if ps, err := netns.ProcessesIn(serverNS); err != nil || len(ps) != 0 {
			t.Errorf("%s: after the run the server host still runs %+v (%v)", server, ps, err)
		}
	}
	_, err = run("true @port", 500*time.Millisecond)
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "exited with status 0 (as a server that daemonises does), and nothing listened on @port") {
		t.Errorf("a server that exits and never listens: %v", err)
	}
}
