package tfrcudp_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"wanlab/internal/roottest"
	"wanlab/internal/traffictest"
	"wanlab/lab"
	"wanlab/netns"
	"wanlab/tcspec"
	"wanlab/tfrc/tfrcudp"
)

func TestMain(m *testing.M) { roottest.Main(m, lab.CleanStale) }

// step is one sample of both sides.
type step struct {
	at      time.Duration
	payload uint64 // application bytes delivered
	p       float64
	x       float64
	rtt     time.Duration
}

type uploadRun struct {
	steps    []step
	sender   tfrcudp.SenderStats
	receiver tfrcudp.ReceiverStats
	dropped  uint64 // by the router, client to server
}

// goodput is the application data rate over the whole run, bits/s.
func (u *uploadRun) goodput() float64 {
	last := u.steps[len(u.steps)-1]
	return float64(last.payload) * 8 / last.at.Seconds()
}

// maxP is the largest loss event rate sampled from t on.
func (u *uploadRun) maxP(from time.Duration) float64 {
	m := 0.0
	for _, s := range u.steps {
		if s.at >= from {
			m = max(m, s.p)
		}
	}
	return m
}

// pAt is the loss event rate sampled at t.
func (u *uploadRun) pAt(t time.Duration) float64 {
	for _, s := range u.steps {
		if s.at >= t {
			return s.p
		}
	}
	return u.steps[len(u.steps)-1].p
}

// upload runs a bulk TFRC transfer from the client to the server of a
// testbed whose directions both carry E2's path, "netem delay 20ms; tbf
// rate R buffer 10000 limit 30000", sampling both sides every 100 ms.
func upload(t *testing.T, rate string, txQLen int, dur time.Duration) *uploadRun {
	t.Helper()
	chain, err := tcspec.ParseChain("netem delay 20ms; tbf rate "+rate+" buffer 10000 limit 30000", tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	roottest.NeedRoot(t)
	name := fmt.Sprintf("tf%06x", time.Now().UnixNano()&0xffffff)
	tb, err := lab.Up(t.Context(), lab.Options{Name: name, Up: chain, Down: chain})
	if err != nil {
		t.Fatalf("lab.Up: %v", err)
	}
	defer func() {
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, r := range []lab.Role{lab.Client, lab.Server} {
			if ns := lab.NamespaceName(name, r); netns.Exists(ns) {
				t.Errorf("namespace %s still exists", ns)
			}
		}
	}()
	info := tb.Info()
	listenIn := func(r lab.Role, addr netip.Addr) net.PacketConn {
		var c net.PacketConn
		if err := netns.Do(tb.Namespace(r), func() (err error) {
			c, err = net.ListenPacket("udp", netip.AddrPortFrom(addr, 0).String())
			return err
		}); err != nil {
			t.Fatalf("socket in the %s: %v", r, err)
		}
		return c
	}
	rc := listenIn(lab.Server, info.Server.Addr4)
	sc := listenIn(lab.Client, info.Client.Addr4)
	snd, err := tfrcudp.NewSender(sc, rc.LocalAddr(), tfrcudp.Config{TxQueueLen: txQLen})
	if err != nil {
		t.Fatal(err)
	}
	rcv := tfrcudp.NewReceiver(rc)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wait := traffictest.Runs(ctx, rcv.Run, snd.Run, snd.Bulk)

	run := &uploadRun{}
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	for range tick.C {
		ss, rs := snd.Stats(), rcv.Stats()
		run.steps = append(run.steps, step{at: time.Since(start), payload: rs.PayloadBytes, p: rs.P, x: ss.X, rtt: ss.RTT})
		if time.Since(start) >= dur {
			break
		}
	}
	tick.Stop()
	run.sender, run.receiver = snd.Stats(), rcv.Stats()
	run.dropped = tb.Status().Up.Counters.Dropped
	cancel()
	wait(t)
	return run
}

func (u *uploadRun) summary(rate string, txq int) string {
	return fmt.Sprintf("%s tx_qlen=%d: goodput %.3f Mbit/s over %.0f s; p %.4f at 2 s, %.4f at 10 s, max %.4f after 10 s; %d loss events, %d packets lost, %d router drops, final RTT %v, X %.3f Mbit/s",
		rate, txq, u.goodput()/1e6, u.steps[len(u.steps)-1].at.Seconds(), u.pAt(2*time.Second), u.pAt(10*time.Second), u.maxP(10*time.Second),
		u.receiver.LossEvents, u.receiver.Lost, u.dropped, u.sender.RTT.Round(time.Millisecond), u.sender.X*8/1e6)
}

// TestUploadThroughE2Path is experiment E2 at 2 Mbit/s through a real
// testbed: 20 s of TFRC upload must reach 90 % of the rate in goodput
// (1448 bytes of data ride in each 1500-byte packet, so the ceiling is
// 96.5 %), with a loss event rate below 1 % over the last 10 s.
func TestUploadThroughE2Path(t *testing.T) {
	u := upload(t, "2mbit", tfrcudp.DefaultTxQueueLen, 20*time.Second)
	t.Log(u.summary("2mbit", tfrcudp.DefaultTxQueueLen))
	if g := u.goodput(); g < 0.9*2e6 {
		t.Errorf("goodput %.3f Mbit/s, want at least 1.8", g/1e6)
	}
	if p := u.maxP(10 * time.Second); p >= 0.01 {
		t.Errorf("loss event rate reaches %.4f in the last 10 s, want below 1 %%", p)
	}
	if u.receiver.LossEvents == 0 {
		t.Error("no loss event: the tbf should have been filled at least once")
	}
}

// TestUploadSweep runs E2's whole grid, R = 1, 2, 5, 10 Mbit/s with
// tx_qlen 5 and 0, and logs the figures. It takes minutes, so it runs only
// when WANLAB_TFRC_SWEEP is set (to the seconds per run; 1 means 60).
func TestUploadSweep(t *testing.T) {
	v := os.Getenv("WANLAB_TFRC_SWEEP")
	if v == "" {
		t.Skip("skipped: set WANLAB_TFRC_SWEEP=SECONDS to run E2's grid")
	}
	secs, err := strconv.Atoi(v)
	if err != nil || secs < 1 {
		t.Fatalf("WANLAB_TFRC_SWEEP=%q: want a number of seconds", v)
	}
	if secs == 1 {
		secs = 60
	}
	for _, rate := range []string{"1mbit", "2mbit", "5mbit", "10mbit"} {
		for _, txq := range []int{tfrcudp.DefaultTxQueueLen, 0} {
			u := upload(t, rate, txq, time.Duration(secs)*time.Second)
			t.Log(u.summary(rate, txq))
		}
	}
}
