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
// buffered writer; a ticker in Run flushes it.
type pcapWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	clk *clock.Real
	err error
	hdr [16]byte
}

func newPcapWriter(w io.Writer, clk *clock.Real) (*pcapWriter, error) {
	p := &pcapWriter{w: bufio.NewWriterSize(w, pcapBufSize), clk: clk}
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
// nothing more; flush reports the error.
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
		p.err = err
		return
	}
	if _, err := p.w.Write(pkt[:n]); err != nil {
		p.err = err
	}
}

func (p *pcapWriter) flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = p.w.Flush()
	}
	if p.err != nil {
		return fmt.Errorf("router: pcap: %w", p.err)
	}
	return nil
}
