package udpflow

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wanlab/clock"
	"wanlab/internal/traffictest"
	"wanlab/traffic"
)

var lo4 = netip.MustParseAddr("127.0.0.1")

// side is a fake Runner: it holds its socket until its context ends.
type side struct {
	conn net.PacketConn
	runs atomic.Int32
	err  error
}

func (s *side) Run(ctx context.Context) error {
	s.runs.Add(1)
	<-ctx.Done()
	s.conn.Close()
	return s.err
}

type sample struct{ K int }

type result struct {
	traffic.FlowInfo
	rec Record[sample]
}

// fake is a Transport whose sides do nothing but hold their sockets.
type fake struct {
	snd, rcv *side
	app      func(context.Context) error
	openErr  error
}

func (f *fake) Open(snd, rcv net.PacketConn) (Ends, error) {
	if f.openErr != nil {
		return Ends{}, f.openErr
	}
	f.snd, f.rcv = &side{conn: snd, err: f.snd.err}, &side{conn: rcv, err: f.rcv.err}
	return Ends{Sender: f.snd, Receiver: f.rcv, App: f.app}, nil
}
func (f *fake) Sample(k int, t clock.Time) sample { return sample{K: k} }
func (f *fake) Delivered() (sent, received int64) { return 10, 7 }
func (f *fake) Result(r Record[sample]) traffic.FlowResult {
	return &result{FlowInfo: r.Info, rec: r}
}

func newFake() *fake { return &fake{snd: &side{}, rcv: &side{}} }

func spec(dir traffic.Direction) Spec {
	h := traffic.Host{Net: traffic.Local{}, Addr: lo4}
	return Spec{Pkg: "fakeflow", Name: "a fake flow", Label: "fake", Kind: "fake", Client: h, Server: h, Dir: dir,
		Start: 200 * time.Millisecond, Stop: 500 * time.Millisecond}
}

// A run samples from the first grid point at or after Start, records when
// the sender ran and the bytes delivered, and leaves nothing behind.
func TestRun(t *testing.T) {
	traffictest.NoLeaks(t)
	tr := newFake()
	var appRan atomic.Bool
	tr.app = func(ctx context.Context) error { appRan.Store(true); <-ctx.Done(); return nil }
	f := traffictest.Must(t, func(s Spec) (*Flow[sample], error) { return New[sample](s, tr) }, spec(traffic.Down))
	res, err := traffic.Run(t.Context(), traffic.Plan{Step: 100 * time.Millisecond, Length: 700 * time.Millisecond, Flows: []traffic.Flow{f}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Flows[0].(*result)
	if r.Error != "" || r.Kind != "fake" || r.Label != "fake" {
		t.Errorf("info %+v", r.FlowInfo)
	}
	if len(r.rec.Samples) == 0 || r.rec.Samples[0].K != 2 || r.rec.Samples[len(r.rec.Samples)-1].K != 7 {
		t.Errorf("samples %v: want grid points 2 (Start) to 7 (the end)", r.rec.Samples)
	}
	if got := r.rec.StartedAt.Sub(res.T0); got < 200*time.Millisecond || got > 300*time.Millisecond {
		t.Errorf("started %v after T0, want 200 ms", got)
	}
	if got := r.rec.StoppedAt.Sub(res.T0); got < 500*time.Millisecond || got > 600*time.Millisecond {
		t.Errorf("stopped %v after T0, want 500 ms", got)
	}
	if r.rec.SentBytes != 10 || r.rec.ReceivedBytes != 7 || !appRan.Load() {
		t.Errorf("sent %d, received %d, application ran %v", r.rec.SentBytes, r.rec.ReceivedBytes, appRan.Load())
	}
	if !r.rec.Sender.IsValid() || !r.rec.Receiver.IsValid() || r.rec.Sender == r.rec.Receiver {
		t.Errorf("sockets %v → %v", r.rec.Sender, r.rec.Receiver)
	}
}

// The sides' errors are the flow's, saying which side failed.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		snd, rcv, app error
		want          string
	}{
		{snd: errors.New("refused"), want: "sender: refused"},
		{rcv: errors.New("refused"), want: "receiver: refused"},
		{app: errors.New("broken"), want: "application: broken"},
	} {
		tr := &fake{snd: &side{err: c.snd}, rcv: &side{err: c.rcv}}
		if c.app != nil {
			tr.app = func(ctx context.Context) error { <-ctx.Done(); return c.app }
		}
		f := traffictest.Must(t, func(s Spec) (*Flow[sample], error) { return New[sample](s, tr) }, spec(traffic.Up))
		res, err := traffic.Run(t.Context(), traffic.Plan{Step: 100 * time.Millisecond, Length: 600 * time.Millisecond, Flows: []traffic.Flow{f}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Flows[0].Info().Error; got != c.want {
			t.Errorf("error %q, want %q", got, c.want)
		}
	}
}

// A flow that opens and is closed without running releases both sides
// through Run on an ended context; it opens once only.
func TestCloseWithoutStart(t *testing.T) {
	traffictest.NoLeaks(t)
	tr := newFake()
	f := traffictest.Must(t, func(s Spec) (*Flow[sample], error) { return New[sample](s, tr) }, spec(traffic.Up))
	if err := f.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f.Close()
	if tr.snd.runs.Load() != 1 || tr.rcv.runs.Load() != 1 {
		t.Errorf("sender run %d times, receiver %d: want each once, to release", tr.snd.runs.Load(), tr.rcv.runs.Load())
	}
	if err := f.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "fakeflow: a fake flow runs once") {
		t.Errorf("a second Open: %v", err)
	}
}

// A transport that fails to open leaves no socket open, and its error
// names the flow.
func TestOpenError(t *testing.T) {
	traffictest.NoLeaks(t)
	tr := newFake()
	tr.openErr = errors.New("no ECT(1)")
	f := traffictest.Must(t, func(s Spec) (*Flow[sample], error) { return New[sample](s, tr) }, spec(traffic.Up))
	if err := f.Open(t.Context()); err == nil || err.Error() != `fakeflow: flow "fake": no ECT(1)` {
		t.Errorf("Open: %v", err)
	}
	f.Close()
}

func TestSpecErrors(t *testing.T) {
	c := traffic.Host{Net: traffic.Local{}, Addr: lo4}
	noAddr := traffic.Host{Net: traffic.Local{}}
	v6 := traffic.Host{Net: traffic.Local{}, Addr: netip.MustParseAddr("::1")}
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Pkg: "x", Label: "x", Server: c}, "both hosts need a Net"},
		{Spec{Pkg: "x", Label: "x", Client: c, Server: c, Dir: 7}, "use traffic.Up or traffic.Down"},
		{Spec{Pkg: "x", Label: "x", Client: c, Server: noAddr}, "the receiving host (the server) has no address"},
		{Spec{Pkg: "x", Label: "x", Client: noAddr, Server: c, Dir: traffic.Down}, "the receiving host (the client) has no address"},
		{Spec{Pkg: "x", Label: "x", Client: v6, Server: c}, "different IP versions"},
		{Spec{Pkg: "x", Label: "x", Client: c, Server: c, TOS: 256}, "not a byte"},
	} {
		if _, err := New[sample](tc.spec, newFake()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
}
