package router

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"wanlab/clock"
)

// failAfter takes n bytes, then fails every write with err.
type failAfter struct {
	n   int
	err error
}

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, w.err
	}
	w.n -= len(p)
	return len(p), nil
}

// A capture whose writer fails stops recording, says why once, and fails
// nothing else: later writes and flushes return at once with the same
// error.
func TestPcapWriterFailsOnce(t *testing.T) {
	gone := errors.New("reader gone")
	calls := make(chan error, 4)
	p, err := newPcapWriter(&failAfter{n: 100, err: gone}, clock.NewReal(), func(err error) { calls <- err })
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 1500)
	for range 1000 {
		p.write(0, pkt) // more than the buffer holds: a write reaches the writer
	}
	if err := p.flush(); !errors.Is(err, gone) || !strings.HasPrefix(err.Error(), "router: pcap: ") {
		t.Errorf("flush: %v, want the writer's error", err)
	}
	if err := p.state(); !errors.Is(err, gone) {
		t.Errorf("state: %v", err)
	}
	select {
	case err := <-calls:
		if !errors.Is(err, gone) {
			t.Errorf("told %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the failure was not reported")
	}
	p.write(0, pkt)
	p.flush()
	time.Sleep(10 * time.Millisecond)
	if len(calls) != 0 {
		t.Errorf("the failure was reported %d more times", len(calls))
	}
	// A capture that works says nothing.
	q, _ := newPcapWriter(io.Discard, clock.NewReal(), func(err error) { t.Errorf("told %v", err) })
	q.write(0, pkt)
	if err := q.flush(); err != nil || q.state() != nil {
		t.Errorf("a working capture: %v", err)
	}
}
