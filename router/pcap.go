package router

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"

	"wanlab/clock"
)

// The pcap stream: classic pcap with nanosecond timestamps (magic
// 0xa1b23c4d) and LINKTYPE_RAW, so each record is one IP packet. A whole
// GSO super-packet is written as the one large IP packet it is (up to 64
// KiB, with the IP length the kernel gave it); tshark and tcpdump read it
// as one TCP segment carrying all the payload.
const (
	pcapMagicNano  = 0xa1b23c4d
	pcapLinkRaw    = 101
	pcapSnapLen    = 262144
	pcapFlushEvery = 100 * time.Millisecond
	pcapBufSize    = 1 << 20
)

// pcapWriter writes records from both directions' loops through one
// buffered writer; a ticker in Run flushes it. The first write or flush
// that fails ends the capture: nothing more is recorded, the loops go on
// forwarding, and failed hears of it once.
type pcapWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	clk    *clock.Real
	err    error
	hdr    [16]byte
	failed func(error)
}

func newPcapWriter(w io.Writer, clk *clock.Real, failed func(error)) (*pcapWriter, error) {
	p := &pcapWriter{w: bufio.NewWriterSize(w, pcapBufSize), clk: clk, failed: failed}
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNano)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], pcapSnapLen)
	binary.LittleEndian.PutUint32(h[20:], pcapLinkRaw)
	if _, err := p.w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("router: pcap: %w", err)
	}
	return p, nil
}

// write records pkt as leaving at t. After a failed write it records
// nothing more.
func (p *pcapWriter) write(t clock.Time, pkt []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	wall := p.clk.Wall(t)
	n := min(len(pkt), pcapSnapLen)
	binary.LittleEndian.PutUint32(p.hdr[0:], uint32(wall.Unix()))
	binary.LittleEndian.PutUint32(p.hdr[4:], uint32(wall.Nanosecond()))
	binary.LittleEndian.PutUint32(p.hdr[8:], uint32(n))
	binary.LittleEndian.PutUint32(p.hdr[12:], uint32(len(pkt)))
	if _, err := p.w.Write(p.hdr[:]); err != nil {
		p.fail(err)
		return
	}
	if _, err := p.w.Write(pkt[:n]); err != nil {
		p.fail(err)
	}
}

// fail ends the capture with err; p.mu is held. The callback runs on a
// goroutine of its own: a loop must not wait for whoever logs it.
func (p *pcapWriter) fail(err error) {
	p.err = err
	if p.failed != nil {
		go p.failed(p.errLocked())
	}
}

// flush writes what is buffered and returns the capture's error, if it
// failed, now or before.
func (p *pcapWriter) flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		if err := p.w.Flush(); err != nil {
			p.fail(err)
		}
	}
	return p.errLocked()
}

// state returns the capture's error, if it failed.
func (p *pcapWriter) state() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errLocked()
}

func (p *pcapWriter) errLocked() error {
	if p.err != nil {
		return fmt.Errorf("router: pcap: %w", p.err)
	}
	return nil
}
