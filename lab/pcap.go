package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// pcapFlushEvery bounds how stale the file is while the testbed runs, so
// that it can be read (tshark -r) before the testbed is stopped.
const pcapFlushEvery = time.Second

// pcapWriter buffers the router's capture in front of the file: one write
// system call per packet would cost the router more than the packet. It is
// safe for concurrent use, as the router's two directions both write.
type pcapWriter struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	err  error // first write error, reported by Close
	done chan struct{}
	wg   sync.WaitGroup
}

func createPcap(path string) (*pcapWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	p := &pcapWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), done: make(chan struct{})}
	p.wg.Add(1)
	go p.flushLoop()
	return p, nil
}

// Write buffers b; write errors are kept for Close, so that a full disk
// stops the capture, not the router.
func (p *pcapWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return len(b), nil
	}
	if _, err := p.w.Write(b); err != nil {
		p.err = err
	}
	return len(b), nil
}

func (p *pcapWriter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = p.w.Flush()
	}
}

func (p *pcapWriter) flushLoop() {
	defer p.wg.Done()
	t := time.NewTicker(pcapFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.flush()
		}
	}
}

// Close flushes the buffer and closes the file; it reports the first write
// error.
func (p *pcapWriter) Close() error {
	close(p.done)
	p.wg.Wait()
	p.flush()
	err := errors.Join(p.err, p.f.Close())
	if err != nil {
		return fmt.Errorf("pcap %s: %w", p.f.Name(), err)
	}
	return nil
}
