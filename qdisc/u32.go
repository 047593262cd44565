package qdisc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FilterProtocol is the protocol a filter applies to, as tc's "protocol"
// names it: an ethertype the packet must carry, or ProtocolAll.
type FilterProtocol uint16

// The protocols a filter of wanlab's may name: its packets are IPv4 or
// IPv6.
const (
	ProtocolAll  FilterProtocol = 0x0003 // ETH_P_ALL: every packet
	ProtocolIP   FilterProtocol = 0x0800 // ETH_P_IP
	ProtocolIPv6 FilterProtocol = 0x86DD // ETH_P_IPV6
)

// String returns tc's name for the protocol ("ip", "ipv6", "all"), or its
// number.
func (p FilterProtocol) String() string {
	switch p {
	case ProtocolAll:
		return "all"
	case ProtocolIP:
		return "ip"
	case ProtocolIPv6:
		return "ipv6"
	}
	return fmt.Sprintf("0x%04x", uint16(p))
}

// protocolOf returns the ethertype of the IP packet starting at b, as
// the kernel's skb->protocol holds it, or 0 for neither IPv4 nor IPv6.
func protocolOf(b []byte) FilterProtocol {
	if len(b) == 0 {
		return 0
	}
	switch b[0] >> 4 {
	case 4:
		return ProtocolIP
	case 6:
		return ProtocolIPv6
	}
	return 0
}

// U32Key is one key of a u32 selector (struct tc_u32_key): the 32-bit
// word Off bytes from the start of the IP header, read in network byte
// order, matches when (word ^ Val) & Mask == 0. Off is a multiple of 4:
// tc packs every match into such words (see Filter.MatchU8).
type U32Key struct {
	Val, Mask uint32
	Off       int32
}

// maxU32Keys is the most keys tc packs into one selector.
const maxU32Keys = 128

// Filter is one filter of the u32 classifier ("tc filter add dev DEV
// parent 1: protocol ip prio 1 u32 match ip dsfield 0x28 0xfc flowid
// 1:10"): a packet of the protocol whose bytes match every key goes to
// the class ClassID. Filters attached at one point run in increasing Prio
// and, within one Prio, in the order given, as cls_api's chain of
// tcf_protos and u32's list of keys in one hash bucket run them.
//
// Only what u32 does without hash tables, links, actions and marks is
// modelled: keys at fixed offsets from the IP header ("nexthdr+N" offsets
// are N there, as the kernel reads them without a link).
type Filter struct {
	// Parent is where the filter is attached: the qdisc itself (its
	// handle MAJ:0, or 0) or, under htb, one of its classes, whose
	// filters classify packets that a filter above sent to it.
	Parent ClassID
	// Prio is tc's prio (pref), from 1. tc allocates one when a line
	// names none; the caller gives it.
	Prio uint16
	// Protocol is the protocol the filter applies to.
	Protocol FilterProtocol
	// Keys are the selector's keys, all of which must match; none
	// matches every packet of the protocol.
	Keys []U32Key
	// ClassID is the flowid (or classid): the class of the qdisc the
	// filter sends a matching packet to.
	ClassID ClassID
}

// MatchU32 adds "match u32 VAL MASK at OFF" as tc's pack_key32 does: OFF
// must be a multiple of 4.
func (f *Filter) MatchU32(val, mask uint32, off int) error {
	return f.pack(val, mask, off)
}

// MatchU16 adds "match u16 VAL MASK at OFF" as tc's pack_key16 does: the
// key goes into the word at OFF rounded down to a multiple of 4, in its
// high half when OFF is a multiple of 4 and in its low half otherwise (so
// "at 1" matches bytes 2 and 3, as tc has it).
func (f *Filter) MatchU16(val, mask uint32, off int) error {
	if val > math.MaxUint16 || mask > math.MaxUint16 {
		return fmt.Errorf("u16 match %#x/%#x: value and mask are 16 bits; give at most 0xffff", val, mask)
	}
	if off&3 == 0 {
		val, mask = val<<16, mask<<16
	}
	return f.pack(val, mask, off&^3)
}

// MatchU8 adds "match u8 VAL MASK at OFF" as tc's pack_key8 does: the key
// goes into the byte of the word at OFF rounded down to a multiple of 4
// that OFF names.
func (f *Filter) MatchU8(val, mask uint32, off int) error {
	if val > math.MaxUint8 || mask > math.MaxUint8 {
		return fmt.Errorf("u8 match %#x/%#x: value and mask are 8 bits; give at most 0xff", val, mask)
	}
	shift := 8 * (3 - off&3)
	return f.pack(val<<shift, mask<<shift, off&^3)
}

// u32Field is a field of "match ip FIELD" or "match ip6 FIELD" as tc's
// parse_ip and parse_ip6 place it: its width in bits and its offset from
// the IP header (a transport field at a fixed offset: 20 for IPv4, as if
// the header had no options, 40 for IPv6, as if no extension header
// came first).
type u32Field struct {
	bits int
	off  int
}

var u32Fields = map[string]map[string]u32Field{
	"ip": {
		"tos": {8, 1}, "dsfield": {8, 1}, "precedence": {8, 1}, "ihl": {8, 0},
		"protocol": {8, 9}, "sport": {16, 20}, "dport": {16, 22},
		"icmp_type": {8, 20}, "icmp_code": {8, 21},
	},
	"ip6": {
		"protocol": {8, 6}, "flowlabel": {32, 0}, "sport": {16, 40}, "dport": {16, 42},
		"icmp_type": {8, 40}, "icmp_code": {8, 41},
	},
}

// MatchField adds "match ip FIELD VAL MASK" (family "ip") or "match ip6
// FIELD VAL MASK" (family "ip6") as tc places it: for ip, tos (also
// dsfield and precedence), ihl, protocol, sport, dport, icmp_type and
// icmp_code; for ip6, protocol, flowlabel, sport, dport, icmp_type,
// icmp_code and priority (the traffic class, in the word's bits 20-27).
func (f *Filter) MatchField(family, field string, val, mask uint32) error {
	if family == "ip6" && field == "priority" {
		if val > math.MaxUint8 || mask > math.MaxUint8 {
			return fmt.Errorf("ip6 priority %#x/%#x: the traffic class is 8 bits; give at most 0xff", val, mask)
		}
		return f.pack(val<<20, mask<<20, 0)
	}
	fs, ok := u32Fields[family]
	if !ok {
		return fmt.Errorf("unknown match family %q: use ip or ip6", family)
	}
	fd, ok := fs[field]
	if !ok {
		return fmt.Errorf("unknown %s field %q", family, field)
	}
	switch fd.bits {
	case 8:
		return f.MatchU8(val, mask, fd.off)
	case 16:
		return f.MatchU16(val, mask, fd.off)
	}
	return f.MatchU32(val, mask, fd.off)
}

// MatchPrefix adds "match ip src|dst ADDR/BITS" (addr of 4 bytes) or
// "match ip6 src|dst ADDR/BITS" (16 bytes) as tc's parse_ip_addr and
// parse_ip6_addr do: the address's first bits bits, at 12 (src) or 16
// (dst) for IPv4 and 8 or 24 for IPv6, one key per 32-bit word; bits
// beyond the prefix in addr are ignored. A /0 prefix matches any address.
func (f *Filter) MatchPrefix(dst bool, addr []byte, bits int) error {
	off := 8
	switch len(addr) {
	case 4:
		off = 12
	case 16:
	default:
		return fmt.Errorf("an address of %d bytes: give 4 (IPv4) or 16 (IPv6)", len(addr))
	}
	if bits < 0 || bits > 8*len(addr) {
		return fmt.Errorf("prefix length %d: give 0 to %d", bits, 8*len(addr))
	}
	if dst {
		off += len(addr)
	}
	for i := 0; i < bits; i += 32 {
		mask := ^uint32(0)
		if n := bits - i; n < 32 {
			mask <<= 32 - n
		}
		if err := f.pack(binary.BigEndian.Uint32(addr[i/8:]), mask, off+i/8); err != nil {
			return err
		}
	}
	if bits == 0 && len(addr) == 4 {
		// tc's parse_ip_addr packs a zero-mask key, which matches every
		// address but still reads the word (parse_ip6_addr packs none).
		return f.pack(0, 0, off)
	}
	return nil
}

// pack is tc's pack_key: a key at an offset already keyed merges into
// that key (refused when the two contradict each other), else it is
// appended.
func (f *Filter) pack(val, mask uint32, off int) error {
	val &= mask
	for i := range f.Keys {
		k := &f.Keys[i]
		if int(k.Off) != off {
			continue
		}
		if (val^k.Val)&(mask&k.Mask) != 0 {
			return fmt.Errorf("match %08x/%08x at %d contradicts the match %08x/%08x at the same offset; no packet could match both", val, mask, off, k.Val, k.Mask)
		}
		k.Val |= val
		k.Mask |= mask
		return nil
	}
	if off%4 != 0 {
		return fmt.Errorf("u32 match at %d: a 32-bit key's offset is a multiple of 4", off)
	}
	if len(f.Keys) >= maxU32Keys {
		return fmt.Errorf("more than %d u32 keys in one filter; tc packs at most %d", maxU32Keys, maxU32Keys)
	}
	if off < math.MinInt32 || off > math.MaxInt32 {
		return fmt.Errorf("u32 match at %d: the offset does not fit tc's 32 bits", off)
	}
	f.Keys = append(f.Keys, U32Key{Val: val, Mask: mask, Off: int32(off)})
	return nil
}

// check refuses what tc or the kernel refuses of a filter, and what
// wanlab cannot classify: keys before the IP header (wanlab's packets
// have no link-layer header), and protocols other than IP.
func (f *Filter) check() error {
	switch {
	case f.Prio == 0:
		return fmt.Errorf("prio 0: give the filter a prio from 1 (tc allocates one when the line names none)")
	case f.Protocol != ProtocolAll && f.Protocol != ProtocolIP && f.Protocol != ProtocolIPv6:
		return fmt.Errorf("protocol %v: wanlab's packets are IP; use protocol ip, ipv6 or all", f.Protocol)
	case f.ClassID == 0:
		return fmt.Errorf("no flowid: give flowid MAJ:MIN, the class matching packets go to (a u32 filter without one classifies nothing)")
	case len(f.Keys) > maxU32Keys:
		return fmt.Errorf("%d keys: tc packs at most %d into one u32 filter", len(f.Keys), maxU32Keys)
	}
	for _, k := range f.Keys {
		switch {
		case k.Off%4 != 0:
			return fmt.Errorf("key %08x/%08x at %d: a u32 key's offset is a multiple of 4", k.Val, k.Mask, k.Off)
		case k.Off < 0:
			return fmt.Errorf("key %08x/%08x at %d reads before the IP header, the link-layer header, which wanlab's packets do not have; match on the IP header (offset 0 and up)", k.Val, k.Mask, k.Off)
		}
	}
	return nil
}

// sameFilter reports whether a and b are the same filter.
func sameFilter(a, b *Filter) bool {
	if a.Parent != b.Parent || a.Prio != b.Prio || a.Protocol != b.Protocol || a.ClassID != b.ClassID || len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if a.Keys[i] != b.Keys[i] {
			return false
		}
	}
	return true
}
