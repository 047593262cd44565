package qdisc

import (
	"encoding/binary"

	"wanlab/packet"
)

// cake's ACK filter (cake_ack_filter and its helpers in sch_cake.c): when
// a TCP ACK joins a queue, an older pure ACK of the same connection that
// the new one makes redundant (it acknowledges no more, SACKs no more,
// carries no data, no option that could matter, and the same ECE/CWR
// bits) is dropped from the queue.

// TCP flag bits in the header's 32-bit word at offset 12 (tcp_flag_word).
const (
	tcpFlagACK = 0x00100000
	tcpFlagSYN = 0x00020000
	tcpFlagECE = 0x00400000
	tcpFlagCWR = 0x00800000
)

// TCP option kinds cake looks at.
const (
	tcpOptEOL       = 0
	tcpOptNOP       = 1
	tcpOptSACK      = 5
	tcpOptTimestamp = 8
	tcpOptMD5       = 19
	tcpOlenTS       = 10
	tcpOlenSACKBase = 2
)

// cakeTCP is cake_get_iphdr with cake_get_tcphdr: the IP header cake
// compares addresses in (the inner IPv6 header of 6in4) and the TCP
// header, options included, or ok false for a packet that is not TCP
// directly over IPv4, IPv6 or IPv6 in IPv4. A data offset below 5 is
// refused, as later kernels do (6.1 reads on).
func cakeTCP(b []byte) (ip, tcp []byte, ok bool) {
	off := 0
	switch packet.IPVersion(b) {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		ip = b
		switch b[9] {
		case 41: // IPv6 in IPv4
			if len(b) < ihl+40 || b[ihl]>>4 != 6 || b[ihl+6] != packet.ProtoTCP {
				return nil, nil, false
			}
			ip = b[ihl:]
			off = ihl + 40
		case packet.ProtoTCP:
			off = ihl
		default:
			return nil, nil, false
		}
	case 6:
		if b[6] != packet.ProtoTCP {
			return nil, nil, false
		}
		ip, off = b, 40
	default:
		return nil, nil, false
	}
	if len(b) < off+20 {
		return nil, nil, false
	}
	hl := int(b[off+12]>>4) * 4
	if hl < 20 || len(b) < off+hl {
		return nil, nil, false
	}
	return ip, b[off : off+hl], true
}

func tcpFlagWord(t []byte) uint32 { return binary.BigEndian.Uint32(t[12:16]) }

// seqAfter and seqBefore are the kernel's after() and before().
func seqAfter(a, b uint32) bool  { return int32(b-a) < 0 }
func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// tcpOpt is cake_get_tcpopt: the offset in t of the contents of option
// code, and the option's length, or -1.
func tcpOpt(t []byte, code byte) (int, int) {
	i, end := 20, len(t)
	for i < end {
		op := t[i]
		if op == tcpOptEOL {
			break
		}
		if op == tcpOptNOP {
			i++
			continue
		}
		if end-i < 2 {
			break
		}
		size := int(t[i+1])
		if size < 2 || size > end-i {
			break
		}
		if op == code {
			return i + 2, size
		}
		i += size
	}
	return -1, 0
}

// sackCompare is cake_tcph_sack_compare: -1 if a SACKs something b does
// not (or a D-SACK), 1 if b SACKs strictly more bytes, 0 if the same.
func sackCompare(a, b []byte) int {
	ackA := binary.BigEndian.Uint32(a[8:12])
	sa, la := tcpOpt(a, tcpOptSACK)
	sb, lb := tcpOpt(b, tcpOptSACK)
	la -= tcpOlenSACKBase
	lb -= tcpOlenSACKBase
	hasA := sa >= 0 && la >= 8
	hasB := sb >= 0 && lb >= 8
	switch {
	case hasA && !hasB:
		return -1
	case hasB && !hasA:
		return 1
	case !hasA && !hasB:
		return 0
	}
	var bytesA, bytesB uint32
	first := true
	for ; la >= 8; la, sa = la-8, sa+8 {
		startA := binary.BigEndian.Uint32(a[sa:])
		endA := binary.BigEndian.Uint32(a[sa+4:])
		if seqBefore(startA, ackA) {
			return -1 // a D-SACK: never drop it
		}
		bytesA += endA - startA
		found := false
		for l, s := lb, sb; l >= 8; l, s = l-8, s+8 {
			startB := binary.BigEndian.Uint32(b[s:])
			endB := binary.BigEndian.Uint32(b[s+4:])
			if first {
				bytesB += endB - startB
			}
			if !seqAfter(startB, startA) && !seqBefore(endB, endA) {
				found = true
				if !first {
					break
				}
			}
		}
		if !found {
			return -1
		}
		first = false
	}
	if bytesB > bytesA {
		return 1
	}
	return 0
}

// tcpTimestamp is cake_tcph_get_tstamp: TSval and TSecr, 0 without one.
func tcpTimestamp(t []byte) (uint32, uint32) {
	o, l := tcpOpt(t, tcpOptTimestamp)
	if o < 0 || l != tcpOlenTS {
		return 0, 0
	}
	return binary.BigEndian.Uint32(t[o:]), binary.BigEndian.Uint32(t[o+4:])
}

// tcpMayDrop is cake_tcph_may_drop: only ACK among the flags (ECE and CWR
// aside), and no option but MD5, well-formed SACK and a timestamp no later
// than the new ACK's.
func tcpMayDrop(t []byte, tsNew, tsecrNew uint32) bool {
	if tcpFlagWord(t)&0x0F3F0000 != tcpFlagACK {
		return false
	}
	i, end := 20, len(t)
	for i < end {
		op := t[i]
		if op == tcpOptEOL {
			break
		}
		if op == tcpOptNOP {
			i++
			continue
		}
		if end-i < 2 {
			break
		}
		size := int(t[i+1])
		if size < 2 || size > end-i {
			break
		}
		switch op {
		case tcpOptMD5:
		case tcpOptSACK:
			if size%8 != 2 {
				return false
			}
		case tcpOptTimestamp:
			if size != tcpOlenTS {
				return false
			}
			ts := binary.BigEndian.Uint32(t[i+2:])
			tsecr := binary.BigEndian.Uint32(t[i+6:])
			if seqAfter(ts, tsNew) || seqAfter(tsecr, tsecrNew) {
				return false
			}
		default:
			return false
		}
		i += size
	}
	return true
}

// sameHosts reports whether two IP headers of one version have the same
// addresses.
func sameHosts(a, b []byte) bool {
	if a[0]>>4 == 4 {
		return string(a[12:20]) == string(b[12:20])
	}
	return string(a[8:40]) == string(b[8:40])
}

// segLen is the TCP segment's length from its IP header: the total length
// less the header (IPv4), the payload length (IPv6).
func segLen(ip []byte) int {
	if ip[0]>>4 == 4 {
		return int(binary.BigEndian.Uint16(ip[2:4])) - int(ip[0]&0x0f)*4
	}
	return int(binary.BigEndian.Uint16(ip[4:6]))
}

// ackFilter is cake_ack_filter for the packet just added at the tail of
// f: it takes out of f and returns the ACK to drop, or nil. The filter
// drops the eligible ACK nearest the head once it has found two (so one
// always stays to carry the information on), or in aggressive mode a
// single one right before the new ACK with the same ECE/CWR bits.
func (q *Cake) ackFilter(f *cakeFlow) *packet.Packet {
	n := f.q.Len()
	if n < 2 {
		return nil
	}
	ip, tcp, ok := cakeTCP(f.q.At(n - 1).Bytes())
	if !ok {
		return nil
	}
	ts, tsecr := tcpTimestamp(tcp)
	word := tcpFlagWord(tcp)
	if word&(tcpFlagACK|tcpFlagSYN) != tcpFlagACK {
		return nil
	}
	ack := binary.BigEndian.Uint32(tcp[8:12])
	elig := -1
	var eligFlags uint32
	found := 0
	for i := 0; i < n-1; i++ {
		ipc, tcpc, ok := cakeTCP(f.q.At(i).Bytes())
		if !ok || ip[0]>>4 != ipc[0]>>4 || string(tcpc[0:4]) != string(tcp[0:4]) || !sameHosts(ip, ipc) {
			continue
		}
		wc := tcpFlagWord(tcpc)
		// A change of ECE/CWR since the eligible ACK makes it carry
		// information: it stays.
		if elig >= 0 && wc&(tcpFlagECE|tcpFlagCWR) != eligFlags {
			elig = -1
			found--
		}
		ackc := binary.BigEndian.Uint32(tcpc[8:12])
		if !tcpMayDrop(tcpc, ts, tsecr) || segLen(ipc)-len(tcpc) != 0 || seqAfter(ackc, ack) {
			continue
		}
		if c := sackCompare(tcpc, tcp); c < 0 || (ackc == ack && c == 0) {
			continue
		}
		if elig < 0 {
			elig = i
			eligFlags = wc & (tcpFlagECE | tcpFlagCWR)
		}
		found++
		if found > 1 {
			return removeAt(&f.q, elig)
		}
	}
	if elig >= 0 && q.cfg.AckFilter == CakeAckFilterAggressive && elig == n-2 && eligFlags == word&(tcpFlagECE|tcpFlagCWR) {
		return removeAt(&f.q, elig)
	}
	return nil
}

// removeAt takes the packet at position i out of r, keeping the others'
// order.
func removeAt(r *ring, i int) *packet.Packet {
	n := r.Len()
	var out *packet.Packet
	for j := range n {
		p := r.Pop()
		if j == i {
			out = p
			continue
		}
		r.Push(p)
	}
	return out
}
