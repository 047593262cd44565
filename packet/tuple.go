package packet

import "encoding/binary"

// Tuple is a flow's 5-tuple. IPv4 addresses are stored in the first four
// bytes of Src and Dst.
type Tuple struct {
	Src, Dst         [16]byte
	SrcPort, DstPort uint16
	Proto            uint8
	Version          uint8 // 4 or 6
}

// Transport locates the transport header: the protocol number and the offset
// of its header in b. For IPv6, hop-by-hop, routing, destination-options and
// fragment headers are skipped. A non-first fragment reports its protocol
// with offset -1 (ports are not there).
func Transport(b []byte) (proto uint8, off int, err error) {
	switch IPVersion(b) {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		if len(b) < ihl {
			return 0, 0, ErrTruncated
		}
		proto = b[9]
		if binary.BigEndian.Uint16(b[6:8])&0x1fff != 0 {
			return proto, -1, nil
		}
		return proto, ihl, nil
	case 6:
		next, off := b[6], 40
		for i := 0; i < 8; i++ {
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if len(b) < off+8 {
					return 0, 0, ErrTruncated
				}
				next, off = b[off], off+8*(int(b[off+1])+1)
			case 44: // fragment
				if len(b) < off+8 {
					return 0, 0, ErrTruncated
				}
				frag := binary.BigEndian.Uint16(b[off+2:off+4]) &^ 7
				next, off = b[off], off+8
				if frag != 0 {
					return next, -1, nil
				}
			default:
				return next, off, nil
			}
		}
		return next, -1, nil
	}
	return 0, 0, ErrVersion
}

// ParseTuple extracts the 5-tuple of an IPv4 or IPv6 packet. Ports are zero
// for protocols without them (ICMP uses its identifier as both ports, so an
// echo exchange is one flow) and for non-first fragments.
func ParseTuple(b []byte) (Tuple, error) {
	var t Tuple
	proto, off, err := Transport(b)
	if err != nil {
		return t, err
	}
	t.Proto = proto
	if IPVersion(b) == 4 {
		t.Version = 4
		copy(t.Src[:4], b[12:16])
		copy(t.Dst[:4], b[16:20])
	} else {
		t.Version = 6
		copy(t.Src[:], b[8:24])
		copy(t.Dst[:], b[24:40])
	}
	if off < 0 {
		return t, nil
	}
	switch proto {
	case ProtoTCP, ProtoUDP, 132 /* SCTP */, 33 /* DCCP */, 136 /* UDP-Lite */ :
		if len(b) < off+4 {
			return t, ErrTruncated
		}
		t.SrcPort = binary.BigEndian.Uint16(b[off:])
		t.DstPort = binary.BigEndian.Uint16(b[off+2:])
	case ProtoICMP, ProtoICMPv6:
		if len(b) < off+8 {
			return t, ErrTruncated
		}
		id := binary.BigEndian.Uint16(b[off+4:])
		t.SrcPort, t.DstPort = id, id
	}
	return t, nil
}

// Reverse returns the tuple of the opposite direction.
func (t Tuple) Reverse() Tuple {
	t.Src, t.Dst = t.Dst, t.Src
	t.SrcPort, t.DstPort = t.DstPort, t.SrcPort
	return t
}

// Canonical returns the tuple or its reverse, whichever orders first, so
// that both directions of a connection map to the same value.
func (t Tuple) Canonical() Tuple {
	r := t.Reverse()
	for i := range t.Src {
		if t.Src[i] != r.Src[i] {
			if t.Src[i] < r.Src[i] {
				return t
			}
			return r
		}
	}
	if t.SrcPort <= r.SrcPort {
		return t
	}
	return r
}

// Hash returns a seeded, direction-symmetric 32-bit hash of the tuple, as
// fq_codel's classifier uses (the kernel's flow dissector hash is symmetric
// and keyed by a per-boot secret; the seed plays the secret's part). Each
// endpoint (address, port) is reduced to 64 bits and the pair is ordered, so
// both directions hash alike.
func (t Tuple) Hash(seed uint64) uint32 {
	var a, c uint64
	if t.Version == 4 {
		a = uint64(binary.BigEndian.Uint32(t.Src[:4]))<<16 | uint64(t.SrcPort)
		c = uint64(binary.BigEndian.Uint32(t.Dst[:4]))<<16 | uint64(t.DstPort)
	} else {
		a = endpoint6(t.Src, t.SrcPort)
		c = endpoint6(t.Dst, t.DstPort)
	}
	return hashEndpoints(a, c, t.Proto, seed)
}

// endpoint6 reduces an IPv6 address and port to 64 bits.
func endpoint6(addr [16]byte, port uint16) uint64 {
	return mix(binary.BigEndian.Uint64(addr[:8])^mix(binary.BigEndian.Uint64(addr[8:]))) ^ uint64(port)
}

// hashEndpoints combines two endpoint keys symmetrically.
func hashEndpoints(a, c uint64, proto uint8, seed uint64) uint32 {
	if a > c {
		a, c = c, a
	}
	z := mix(seed ^ a ^ uint64(proto)<<56 ^ mix(c^0x5851f42d4c957f2d))
	return uint32(z>>32) ^ uint32(z)
}

// mix is the splitmix64 finaliser: a fast bijection with good avalanche.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// FlowHash returns the packet's cached hash, computing it on first use.
// Packets that are not IP hash to 1 (one shared flow); 0 is reserved for
// "not computed".
func (p *Packet) FlowHash(seed uint64) uint32 {
	if p.Hash != 0 {
		return p.Hash
	}
	p.Hash = p.KeyedHash(seed)
	return p.Hash
}

// KeyedHash returns the packet's flow hash under seed, computed afresh and
// not cached: the hash of a discipline that keys it with a secret of its
// own and changes that secret (sfq's perturbation, as the kernel's
// skb_get_hash_perturb dissects the packet each time). It is never 0;
// packets that are not IP hash to 1.
func (p *Packet) KeyedHash(seed uint64) uint32 {
	h := uint32(1)
	if fh, ok := fastHash4(p.Bytes(), seed); ok {
		h = fh
	} else if t, err := ParseTuple(p.Bytes()); err == nil {
		h = t.Hash(seed)
	}
	if h == 0 {
		h = 1
	}
	return h
}

// fastHash4 hashes an unfragmented IPv4 TCP or UDP packet straight from its
// header, as Tuple.Hash would hash its tuple: the per-packet hot path of
// fq_codel's classifier, without building a Tuple.
func fastHash4(b []byte, seed uint64) (uint32, bool) {
	if len(b) < 24 || b[0] != 0x45 {
		return 0, false
	}
	proto := b[9]
	if (proto != ProtoTCP && proto != ProtoUDP) || binary.BigEndian.Uint16(b[6:8])&0x3fff != 0 {
		return 0, false
	}
	a := uint64(binary.BigEndian.Uint32(b[12:16]))<<16 | uint64(binary.BigEndian.Uint16(b[20:22]))
	c := uint64(binary.BigEndian.Uint32(b[16:20]))<<16 | uint64(binary.BigEndian.Uint16(b[22:24]))
	return hashEndpoints(a, c, proto, seed), true
}
