package tcspec

import (
	"fmt"
	"net/netip"
	"strings"

	"wanlab/qdisc"
)

// This file reads and prints the u32 filters of tc lines as f_u32.c's
// u32_parse_opt reads them, into qdisc.Filter: the matches scripts use,
// the class they send to, and refusals, naming the fix, of what wanlab's
// u32 has not (hash tables, links, actions, policers, marks).

const u32Takes = "match SELECTOR (u32|u16|u8 VAL MASK [at OFF], ip|ip6|tcp|udp|icmp FIELD ...), flowid|classid MAJ:MIN"

// parseU32 reads the options after "u32" into f (whose parent, prio and
// protocol the line gave).
func parseU32(a *args, f *qdisc.Filter) error {
	for a.more() {
		w := a.take()
		switch {
		case matches(w, "match"):
			if err := parseMatch(a, f); err != nil {
				return err
			}
		case matches(w, "classid"), w == "flowid":
			v, err := a.value(w, "MAJ:MIN")
			if err != nil {
				return err
			}
			id, err := ParseClassID(v)
			if err != nil {
				return a.bad(w, v, err)
			}
			f.ClassID = id
		case w == "skip_hw":
			// Hardware offload is off anyway: wanlab is the software path.
		case w == "skip_sw":
			return a.fail(w, "%q runs the filter in a network card only; wanlab has no card: drop it", w)
		case matches(w, "offset"), matches(w, "hashkey"), matches(w, "divisor"), w == "link", w == "ht", w == "sample", matches(w, "order"):
			return a.fail(w, "%q: wanlab's u32 has no hash tables, links or variable offsets, only the filters' own keys: write each filter with its matches (a header after IP options is read at its fixed offset)", w)
		case matches(w, "action"), matches(w, "police"):
			return a.fail(w, "%q: wanlab runs no actions or policers; a filter only chooses a class: drop it and shape with the class's rate", w)
		case w == "indev":
			return a.fail(w, "%q: a direction has one device in wanlab; drop it", w)
		default:
			return a.unknown(w, u32Takes)
		}
	}
	return nil
}

// parseMatch reads one selector after "match", as parse_selector.
func parseMatch(a *args, f *qdisc.Filter) error {
	sel, err := a.value("match", "SELECTOR")
	if err != nil {
		return err
	}
	switch {
	case matches(sel, "u32"):
		return matchRaw(a, f, sel, 32, 0)
	case matches(sel, "u16"):
		return matchRaw(a, f, sel, 16, 0)
	case matches(sel, "u8"):
		return matchRaw(a, f, sel, 8, 0)
	case matches(sel, "ip"):
		return matchIP(a, f, false)
	case matches(sel, "ip6"):
		return matchIP(a, f, true)
	case matches(sel, "udp"), matches(sel, "tcp"):
		// The ports at nexthdr+0 and nexthdr+2, which the kernel reads
		// from the IP header's start without a link's offset.
		field, err := a.value(sel, "src|dst")
		if err != nil {
			return err
		}
		switch field {
		case "src":
			return matchRaw(a, f, sel+" src", 16, 0)
		case "dst":
			return matchRaw(a, f, sel+" dst", 16, 2)
		}
		return a.fail(field, "%q: %s matches src or dst", sel+" "+field, sel)
	case matches(sel, "icmp"):
		field, err := a.value(sel, "type|code")
		if err != nil {
			return err
		}
		switch field {
		case "type":
			return matchRaw(a, f, "icmp type", 8, 0)
		case "code":
			return matchRaw(a, f, "icmp code", 8, 1)
		}
		return a.fail(field, "%q: icmp matches type or code", "icmp "+field)
	case matches(sel, "mark"):
		return a.fail(sel, "\"match mark\" reads the firewall mark, which wanlab's packets do not carry: match the packet's own fields (ip dsfield, ports, addresses)")
	case matches(sel, "ether"):
		return a.fail(sel, "\"match ether\" reads the Ethernet header, which wanlab's router does not see: match the IP header")
	}
	return a.fail(sel, "%q: unknown match: write u32, u16, u8, ip, ip6, tcp, udp or icmp", sel)
}

// matchRaw reads "VAL MASK [at OFF]" of a bits-wide key at off, as
// parse_u32, parse_u16 and parse_u8: the value in any base, the mask in
// hex (tc reads "255" as 0x255), "at" then an offset or nexthdr+N (read at
// N: without a link the kernel adds no offset).
func matchRaw(a *args, f *qdisc.Filter, what string, bits, off int) error {
	v, m, val, mask, err := valueMask(a, what)
	if err != nil {
		return err
	}
	if a.peek() == "at" {
		a.take()
		if off, err = matchAt(a); err != nil {
			return err
		}
	}
	return matchRawAt(a, f, what, v, m, bits, val, mask, off)
}

// valueMask reads "VAL MASK" of a match: the value in any base, the mask
// in hex, as tc's get_u32 with base 0 and 16.
func valueMask(a *args, what string) (v, m string, val, mask uint32, err error) {
	if v, err = a.value(what, "VALUE MASK"); err != nil {
		return
	}
	n, err := getUint(v, 0, 1<<32-1)
	if err != nil {
		return v, m, 0, 0, a.bad(what, v, err)
	}
	if m, err = a.value(what, "VALUE MASK"); err != nil {
		return
	}
	k, err := getUint(m, 16, 1<<32-1)
	if err != nil {
		return v, m, 0, 0, a.bad(what+" "+v, m, fmt.Errorf("%v (tc reads a mask in hex)", err))
	}
	return v, m, uint32(n), uint32(k), nil
}

// matchAt reads parse_at's OFF: a number in any base, or nexthdr+N.
func matchAt(a *args) (int, error) {
	v, err := a.value("at", "OFFSET")
	if err != nil {
		return 0, err
	}
	s := v
	switch {
	case len(v) > len("nexthdr+") && strings.HasPrefix(v, "nexthdr+"):
		s = v[len("nexthdr+"):]
	case matches(v, "nexthdr+"):
		if s, err = a.value(v, "N"); err != nil {
			return 0, err
		}
	}
	n, err := getInt(s, 0, -1<<31, 1<<31-1)
	if err != nil {
		return 0, a.bad("at", v, err)
	}
	return int(n), nil
}

// ipFields are the fields of "match ip" and "match ip6" that are a value
// and a mask, in the order parse_ip and parse_ip6 try them: by prefix
// where tc takes one.
var ipFields = map[bool][]struct {
	name   string
	prefix bool
}{
	false: {{"tos", false}, {"dsfield", true}, {"precedence", true}, {"ihl", false}, {"protocol", false},
		{"dport", false}, {"sport", false}, {"icmp_type", false}, {"icmp_code", false}},
	true: {{"priority", false}, {"protocol", false}, {"flowlabel", false}, {"dport", false}, {"sport", false},
		{"icmp_type", false}, {"icmp_code", false}},
}

// matchIP reads "match ip FIELD ..." or "match ip6 FIELD ...".
func matchIP(a *args, f *qdisc.Filter, v6 bool) error {
	family := "ip"
	if v6 {
		family = "ip6"
	}
	field, err := a.value(family, "FIELD")
	if err != nil {
		return err
	}
	what := family + " " + field
	switch field {
	case "src", "dst":
		return matchPrefix(a, f, what, field == "dst", v6)
	case "nofrag", "firstfrag", "df", "mf":
		if v6 {
			break
		}
		// The flags and fragment offset, the 16 bits at 6.
		val := map[string]uint32{"nofrag": 0, "firstfrag": 0x2000, "df": 0x4000, "mf": 0x2000}[field]
		mask := map[string]uint32{"nofrag": 0x3fff, "firstfrag": 0x3fff, "df": 0x4000, "mf": 0x2000}[field]
		if err := f.MatchU16(val, mask, 6); err != nil {
			return a.fail(field, "%q: %v", what, err)
		}
		return nil
	}
	for _, fd := range ipFields[v6] {
		if field != fd.name && !(fd.prefix && matches(field, fd.name)) {
			continue
		}
		v, m, val, mask, err := valueMask(a, what)
		if err != nil {
			return err
		}
		name := fd.name
		if name == "dsfield" || name == "precedence" {
			name = "tos"
		}
		if a.peek() == "at" && !(v6 && name == "priority") {
			// parse_u8 and parse_u16 take "at" after the mask, which
			// moves the field.
			a.take()
			off, err := matchAt(a)
			if err != nil {
				return err
			}
			return matchRawAt(a, f, what, v, m, fieldBits(name), val, mask, off)
		}
		if err := f.MatchField(family, name, val, mask); err != nil {
			return a.fail(v, "%q: %v", what+" "+v+" "+m, err)
		}
		return nil
	}
	return a.fail(field, "%q: unknown field: match %s takes src, dst, %s", what, family, fieldList(v6))
}

// fieldBits is the width of a field of "match ip" or "match ip6".
func fieldBits(name string) int {
	switch name {
	case "sport", "dport":
		return 16
	case "flowlabel":
		return 32
	}
	return 8
}

// matchRawAt adds a bits-wide key at off, as tc's pack_key32, 16 and 8.
func matchRawAt(a *args, f *qdisc.Filter, what, v, m string, bits int, val, mask uint32, off int) error {
	var err error
	switch bits {
	case 32:
		err = f.MatchU32(val, mask, off)
	case 16:
		err = f.MatchU16(val, mask, off)
	default:
		err = f.MatchU8(val, mask, off)
	}
	if err != nil {
		return a.fail(v, "%q: %v", what+" "+v+" "+m, err)
	}
	return nil
}

func fieldList(v6 bool) string {
	var names []string
	for _, fd := range ipFields[v6] {
		names = append(names, fd.name)
	}
	if !v6 {
		names = append(names, "nofrag", "firstfrag", "df", "mf")
	}
	return strings.Join(names, ", ")
}

// matchPrefix reads "ADDR[/LEN] [at OFF]" of match ip|ip6 src|dst, as
// parse_ip_addr and parse_ip6_addr: a bare address is a whole one;
// "default", "any" and "all" are /0.
func matchPrefix(a *args, f *qdisc.Filter, what string, dst, v6 bool) error {
	v, err := a.value(what, "ADDRESS[/LEN]")
	if err != nil {
		return err
	}
	var addr []byte
	bits := 0
	switch v {
	case "default", "any", "all":
		addr = make([]byte, 4)
		if v6 {
			addr = make([]byte, 16)
		}
	default:
		p, err := netip.ParsePrefix(v)
		if err != nil {
			ip, err2 := netip.ParseAddr(v)
			if err2 != nil {
				return a.fail(v, "%q: not an address or a prefix: write e.g. 10.0.0.0/8", what+" "+v)
			}
			p = netip.PrefixFrom(ip, ip.BitLen())
		}
		if p.Addr().Is4() == v6 || p.Addr().Zone() != "" {
			want := "an IPv4"
			if v6 {
				want = "an IPv6"
			}
			return a.fail(v, "%q: match %s takes %s address", what+" "+v, strings.Fields(what)[0], want)
		}
		addr, bits = p.Addr().AsSlice(), p.Bits()
	}
	if a.peek() == "at" {
		return a.fail("at", "%q: an address read at another offset: wanlab reads src and dst where they are; drop \"at\"", what+" "+v+" at")
	}
	if err := f.MatchPrefix(dst, addr, bits); err != nil {
		return a.fail(v, "%q: %v", what+" "+v, err)
	}
	return nil
}

// parseClassID reads a class handle as get_tc_classid does: MAJ:MIN in
// hex, MAJ: (minor 0), :MIN (major 0), or a bare hex number, which is the
// whole 32-bit handle.
func ParseClassID(s string) (qdisc.ClassID, error) {
	maj, min, colon := strings.Cut(s, ":")
	if !colon {
		n, err := getUint(s, 16, 1<<32-1)
		if err != nil {
			return 0, fmt.Errorf("bad class %q: write MAJ:MIN in hex, e.g. 1:10", s)
		}
		return qdisc.ClassID(n), nil
	}
	var ma, mi uint64
	var err error
	if maj != "" {
		if ma, err = getUint(maj, 16, 0xffff); err != nil {
			return 0, fmt.Errorf("bad class %q: write MAJ:MIN in hex, each at most ffff, e.g. 1:10", s)
		}
	}
	if min != "" {
		if mi, err = getUint(min, 16, 0xffff); err != nil {
			return 0, fmt.Errorf("bad class %q: write MAJ:MIN in hex, each at most ffff, e.g. 1:10", s)
		}
	}
	return qdisc.MakeClassID(uint16(ma), uint16(mi)), nil
}

// parseHandle reads a qdisc's handle as get_qdisc_handle does: MAJ, MAJ:
// (what follows the colon is not read), in hex; 0 is no handle.
func parseHandle(s string) (uint16, error) {
	maj, _, _ := strings.Cut(s, ":")
	n, err := getUint(maj, 16, 0xffff)
	if err != nil || maj == "" {
		return 0, fmt.Errorf("bad handle %q: write MAJ: in hex, e.g. 1: or 10:", s)
	}
	return uint16(n), nil
}

// formatFilter prints f's classifier options as parseU32 reads them
// back: each key as "match u32 VAL MASK at OFF", then the flowid.
func formatFilter(f qdisc.Filter) string {
	b := words{w: []string{"u32"}}
	for _, k := range f.Keys {
		b.add("match", "u32", fmt.Sprintf("0x%08x", k.Val), fmt.Sprintf("0x%08x", k.Mask), "at", fmt.Sprint(k.Off))
	}
	b.add("flowid", f.ClassID.String())
	return b.String()
}

// protocolName is tc's name for a filter protocol wanlab takes.
var protocolNames = map[string]qdisc.FilterProtocol{"ip": qdisc.ProtocolIP, "ipv6": qdisc.ProtocolIPv6, "all": qdisc.ProtocolAll}
