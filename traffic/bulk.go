package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"wanlab/clock"
)

// BulkSpec is what a bulk flow's lifecycle needs of its configuration.
type BulkSpec struct {
	// Name says what the flow is in the error of a second Open, for
	// instance "traffic: a TCP flow".
	Name string
	// Label, Kind, Start and Stop are the result's FlowInfo: the client
	// connects at Start, and the sender stops writing at Stop.
	Label, Kind string
	Start, Stop time.Duration
	// Dir is Up when the client sends, Down when the server sends.
	Dir Direction
	// Bytes, if positive, is how much the sender writes before it stops
	// (it stops at Stop all the same if that comes first).
	Bytes int64
	// WriteSize is how much the sender hands the transport per write,
	// ReadSize how much the receiver reads at most per read.
	WriteSize, ReadSize int
	// AbortOnCancel closes the connections as soon as the run's context
	// ends, not only at Close.
	AbortOnCancel bool
}

// BulkTransport is the part of a bulk flow that depends on its transport.
// C is one end of a connection, E what the result says of an end once
// connected, and S one grid point's sample.
//
// BulkFlow calls Open, Sample and Result on the goroutine that drives the
// run, Connect, End and the streams' methods on the flow's own
// goroutines, and CloseConn and Abort on any of them; Release comes last, once
// the flow's goroutines have ended.
type BulkTransport[C, E, S any] interface {
	// Open makes the sockets the flow needs before the run starts (see
	// Flow.Open); if it fails, BulkFlow calls Abort and Release.
	Open(ctx context.Context) error
	// Connect makes the connection at Start: the client connects, the
	// server accepts. It hands each end to adopt as soon as it exists;
	// if adopt returns false, the flow is closing and has closed that
	// end, and Connect returns net.ErrClosed.
	Connect(ctx context.Context, adopt func(C) bool) (client, server C, err error)
	// End describes one end of the new connection; client says which.
	End(c C, client bool) (E, error)
	// SendStream opens the stream on the sending end: what the sender
	// writes to, and end, which ends the stream (FIN) once the last write
	// has returned. Errors say what failed ("open stream: …").
	SendStream(c C) (w StreamWriter, end func() error, err error)
	// ReceiveStream returns the stream the receiving end reads.
	ReceiveStream(ctx context.Context, c C) (io.Reader, error)
	// Sample reads the flow at grid point k, read at time t: snd and rcv
	// are the sending and the receiving end (zero values while
	// connected is false), and counts the byte counts, which Sample reads
	// in the order the sample's invariants need. The sample is recorded
	// even with an error, which the flow records as its failure.
	Sample(k int, t clock.Time, snd, rcv C, connected bool, counts *BulkCounts) (S, error)
	// CloseConn closes one end at once, discarding what it still holds
	// to send, so that nothing of the flow crosses the path afterwards.
	CloseConn(c C)
	// Abort closes whatever listens or dials, which ends every blocked
	// Connect. It runs once, after the connections have been closed.
	Abort()
	// Release closes the sockets Open made.
	Release()
	// Result makes the flow's result from what BulkFlow recorded.
	Result(r BulkRecord[E, S]) FlowResult
}

// StreamWriter is the sending side of a bulk flow's stream.
type StreamWriter interface {
	io.Writer
	// SetWriteDeadline makes a write blocked at the deadline, or begun
	// after it, return os.ErrDeadlineExceeded.
	SetWriteDeadline(time.Time) error
}

// BulkRecord is what BulkFlow records of a flow, for its transport's
// result.
type BulkRecord[E, S any] struct {
	Info FlowInfo
	// Sender and Receiver are the two ends as the transport described
	// them once connected; zero if the flow never connected.
	Sender, Receiver E
	Outcome          BulkOutcome
	// Samples are the readings at the grid points from the first one at
	// or after Start to the first one after the receiver read the end of
	// the stream (or the end of the run).
	Samples []S
}

// BulkOutcome is what became of a bulk flow's one stream, the part of the
// results of TCP and of other transports' bulk flows (QUIC) that says it
// the same way. They embed it.
type BulkOutcome struct {
	// Connected says whether the connection was made (its handshake
	// completed), and ConnectedAt when the client's connect or dial
	// returned.
	Connected   bool       `json:"connected"`
	ConnectedAt clock.Time `json:"connected_ns"`
	// StoppedAt is when the sender stopped writing (0 if it never
	// started).
	StoppedAt clock.Time `json:"stopped_ns"`
	// Complete says whether the receiver read the whole stream, up to the
	// sender's FIN, before the run ended; CompletedAt is when.
	Complete    bool       `json:"complete"`
	CompletedAt clock.Time `json:"completed_ns"`
	// SentBytes is what the sender's application wrote, ReceivedBytes
	// what the receiver's application read, at the end of the run.
	SentBytes     int64 `json:"sent_bytes"`
	ReceivedBytes int64 `json:"received_bytes"`
}

// BulkCounts are a bulk flow's two byte counts: what the sender's
// application has written and what the receiver's has read.
type BulkCounts struct{ sent, received atomic.Int64 }

// Received returns what the receiver has read so far.
func (c *BulkCounts) Received() int64 { return c.received.Load() }

// Sent returns what the sender has written so far (writeBulk's count,
// which lags the write in progress), raised to each of seen: counts read
// before it that cannot exceed what was written, such as what the
// receiver read or what the sender's kernel acknowledged. Each of them
// only grows, so the samples do too, and none of them exceeds what the
// transport has taken.
func (c *BulkCounts) Sent(seen ...int64) int64 {
	n := c.sent.Load()
	for _, s := range seen {
		n = max(n, s)
	}
	return n
}

// BulkFlow is the lifecycle of a bulk flow, the same over every
// transport: at Start the client connects, the sender writes as fast as
// the transport takes the data until Stop (or until it has written Bytes)
// and then ends the stream, and the receiver reads and discards it to its
// end; both count the bytes, and Sample reads them and the two ends' state
// at each grid point from Start until the flow has ended. A BulkTransport
// supplies the rest (how to connect, open the stream, describe and sample
// an end, close), as each of Flent's runners supplies its command and its
// parser to the RunnerBase they share. A transport's flow type embeds
// *BulkFlow, which makes it a Flow: TCP does, and quicflow's Flow.
type BulkFlow[C, E, S any] struct {
	spec BulkSpec
	tr   BulkTransport[C, E, S]

	// Set by Start, read only afterwards.
	env       Env
	runCtx    context.Context
	stopAbort func() bool
	wg        sync.WaitGroup

	counts BulkCounts
	// live counts the flow's goroutines still running; at 0 nothing the
	// flow records changes any more.
	live atomic.Int32

	abortOnce sync.Once
	mu        sync.Mutex // guards what follows
	closed    bool
	conns     []C // every connection made, for abort
	snd, rcv  C   // the sending and the receiving end, once connected
	rec       BulkRecord[E, S]

	// wrote is closed when the sender's writing ends (write returns).
	wrote chan struct{}

	// Used only on the sampling goroutine.
	opened, ended bool
	// pastStop records that a sample at or after Stop has waited for
	// the writing to end.
	pastStop bool
}

// stopWait bounds how long the first sample at or after Stop waits for the
// sender's last write to return. The write's deadline is Stop, so it
// returns within microseconds of it; a sender that never wrote (its
// connection failed) is waited for this long once.
const stopWait = 100 * time.Millisecond

// NewBulkFlow returns the flow of spec over tr.
func NewBulkFlow[C, E, S any](spec BulkSpec, tr BulkTransport[C, E, S]) *BulkFlow[C, E, S] {
	b := &BulkFlow[C, E, S]{spec: spec, tr: tr, wrote: make(chan struct{})}
	b.rec.Info = FlowInfo{Label: spec.Label, Kind: spec.Kind, Start: spec.Start, Stop: spec.Stop}
	return b
}

// Label returns the flow's label.
func (b *BulkFlow[C, E, S]) Label() string { return b.spec.Label }

// Window returns the flow's start and stop offsets.
func (b *BulkFlow[C, E, S]) Window() (start, stop time.Duration) { return b.spec.Start, b.spec.Stop }

// Open makes the transport's sockets, so that a bad address or option is
// an error before the run starts.
func (b *BulkFlow[C, E, S]) Open(ctx context.Context) error {
	if b.opened {
		return fmt.Errorf("%s runs once: make a new one for each run", b.spec.Name)
	}
	b.opened = true
	if err := b.tr.Open(ctx); err != nil {
		b.abort()
		b.tr.Release()
		return err
	}
	return nil
}

// Start launches the flow: at Start it connects and sends.
func (b *BulkFlow[C, E, S]) Start(ctx context.Context, env Env) {
	b.env, b.runCtx = env, ctx
	if b.spec.AbortOnCancel {
		b.stopAbort = context.AfterFunc(ctx, b.abort)
	}
	b.spawn(func() { b.run(ctx) })
}

// spawn runs f on a goroutine of the flow's.
func (b *BulkFlow[C, E, S]) spawn(f func()) {
	b.wg.Add(1)
	b.live.Add(1)
	go func() {
		defer b.wg.Done()
		defer b.live.Add(-1)
		f()
	}()
}

// fail records the first error of the flow's goroutines. Errors once the
// run's context has ended or the flow was closed are the closing's doing,
// not the flow's failure, and are not recorded.
func (b *BulkFlow[C, E, S]) fail(err error) {
	if b.runCtx.Err() != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rec.Info.Error == "" && !b.closed {
		b.rec.Info.Error = err.Error()
	}
}

// adopt records a new connection so that abort closes it; if abort came
// first, it closes c and returns false.
func (b *BulkFlow[C, E, S]) adopt(c C) bool {
	b.mu.Lock()
	if !b.closed {
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		return true
	}
	b.mu.Unlock()
	b.tr.CloseConn(c)
	return false
}

func (b *BulkFlow[C, E, S]) run(ctx context.Context) {
	if !SleepUntil(ctx, b.env.Clock, b.env.At(b.spec.Start)) {
		return
	}
	client, server, err := b.tr.Connect(ctx, b.adopt)
	if err != nil {
		b.fail(err)
		return
	}
	snd, rcv := client, server
	if b.spec.Dir == Down {
		snd, rcv = server, client
	}
	sndEnd, err1 := b.tr.End(snd, b.spec.Dir == Up)
	rcvEnd, err2 := b.tr.End(rcv, b.spec.Dir == Down)
	if err := errors.Join(err1, err2); err != nil {
		b.fail(err)
		return
	}
	b.mu.Lock()
	b.snd, b.rcv = snd, rcv
	b.rec.Outcome.Connected = true
	b.rec.Outcome.ConnectedAt = b.env.Clock.Now()
	b.rec.Sender, b.rec.Receiver = sndEnd, rcvEnd
	b.mu.Unlock()

	b.spawn(func() { b.receive(ctx, rcv) })
	b.send(snd)
}

// send opens the stream, writes until Stop or Bytes, then ends the stream.
func (b *BulkFlow[C, E, S]) send(c C) {
	w, end, err := b.tr.SendStream(c)
	if err != nil {
		b.fail(err)
		return
	}
	if err := b.write(w); err != nil {
		if !errClosed(err) {
			b.fail(fmt.Errorf("send: %w", err))
		}
		return
	}
	if err := end(); err != nil && !errClosed(err) {
		b.fail(err)
	}
}

// write writes until Stop or Bytes, and records when it stopped.
func (b *BulkFlow[C, E, S]) write(w StreamWriter) error {
	defer func() {
		b.mu.Lock()
		b.rec.Outcome.StoppedAt = b.env.Clock.Now()
		b.mu.Unlock()
		close(b.wrote)
	}()
	w.SetWriteDeadline(b.env.Clock.Wall(b.env.At(b.spec.Stop)))
	return writeBulk(w, make([]byte, b.spec.WriteSize), b.spec.Bytes, &b.counts.sent)
}

// receive reads and discards the stream until its end.
func (b *BulkFlow[C, E, S]) receive(ctx context.Context, c C) {
	r, err := b.tr.ReceiveStream(ctx, c)
	if err != nil {
		b.fail(err)
		return
	}
	buf := make([]byte, b.spec.ReadSize)
	for {
		n, err := r.Read(buf)
		b.counts.received.Add(int64(n))
		if err == io.EOF {
			b.mu.Lock()
			// An end of stream that closing caused is not the sender's.
			if !b.closed {
				b.rec.Outcome.Complete = true
				b.rec.Outcome.CompletedAt = b.env.Clock.Now()
			}
			b.mu.Unlock()
			return
		}
		if err != nil {
			if !errClosed(err) {
				b.fail(fmt.Errorf("receive: %w", err))
			}
			return
		}
	}
}

// Sample reads the flow from the first grid point at or after Start until
// the flow has ended.
func (b *BulkFlow[C, E, S]) Sample(k int, t clock.Time) {
	if b.ended || b.env.Grid(k) < b.env.At(b.spec.Start) {
		return
	}
	if !b.pastStop && b.spec.Stop > 0 && b.env.Grid(k) >= b.env.At(b.spec.Stop) {
		// The write in progress at Stop counts its bytes when it
		// returns, just after Stop: waiting for it puts them in the
		// step they were written in, not the next one, after the
		// flow's stop.
		b.pastStop = true
		t := time.NewTimer(stopWait)
		select {
		case <-b.wrote:
		case <-t.C:
		}
		t.Stop()
	}
	// Read whether the flow has ended before reading its counts: if it
	// has, they are final and this is its last sample.
	b.ended = b.live.Load() == 0
	b.mu.Lock()
	snd, rcv, connected := b.snd, b.rcv, b.rec.Outcome.Connected
	b.mu.Unlock()
	s, err := b.tr.Sample(k, t, snd, rcv, connected, &b.counts)
	if err != nil {
		b.fail(err)
	}
	b.mu.Lock()
	b.rec.Samples = append(b.rec.Samples, s)
	b.mu.Unlock()
}

// abort closes every connection and then what listens, which ends every
// blocked call of the flow's goroutines; it runs once, when the run's
// context ends (with AbortOnCancel), at Close, or when Open fails.
func (b *BulkFlow[C, E, S]) abort() {
	b.abortOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		conns := b.conns
		b.mu.Unlock()
		for _, c := range conns {
			b.tr.CloseConn(c)
		}
		b.tr.Abort()
	})
}

// Close stops the flow, waits for its goroutines and closes its sockets.
func (b *BulkFlow[C, E, S]) Close() {
	if b.stopAbort != nil {
		b.stopAbort()
	}
	// If the context's AfterFunc is running abort, this waits for it.
	b.abort()
	b.wg.Wait()
	b.tr.Release()
	b.mu.Lock()
	b.rec.Outcome.SentBytes = b.counts.sent.Load()
	b.rec.Outcome.ReceivedBytes = b.counts.received.Load()
	b.mu.Unlock()
}

// Result returns what the flow recorded, as its transport's result.
func (b *BulkFlow[C, E, S]) Result() FlowResult {
	b.mu.Lock()
	r := b.rec
	b.mu.Unlock()
	return b.tr.Result(r)
}

// writeBulk is a bulk sender's loop: it writes buf to w again and again
// until w's write deadline passes (nil) or, if limit is positive, until
// sent reaches limit (nil), or w fails (the error). What each write took
// is added to sent once the write returns, so sent only grows: a count
// made before the write and taken back after a short one (the last write,
// cut by the deadline) fell between two samples, a negative step in the
// sender's rate. sent thus lags what the transport has taken by at most
// the write in progress; a sample of it takes the larger of it and what
// the receiver has read (BulkCounts.Sent).
func writeBulk(w io.Writer, buf []byte, limit int64, sent *atomic.Int64) error {
	for {
		n := len(buf)
		if limit > 0 {
			left := limit - sent.Load()
			if left <= 0 {
				return nil
			}
			n = int(min(left, int64(n)))
		}
		m, err := w.Write(buf[:n])
		sent.Add(int64(m))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
