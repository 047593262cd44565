package sim

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"wanlab/link"
	"wanlab/packet"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// Flow is a synthetic traffic source: a CBR or a Poisson flow of UDP
// packets of one size. Its String is its ParseFlow form.
type Flow interface {
	String() string
	// base returns the flow's parameters; the interface is sealed.
	base() CBR
	poisson() bool
}

// CBR is a constant-bit-rate flow: packet k (from 0) is sent at
// Start + floor(k·Size/Rate), exactly, without drift.
type CBR struct {
	// Rate is the flow's rate in bytes per second (tc's unit: "10mbit" is
	// 1250000), counting whole IP packets.
	Rate qdisc.Rate
	// Size is the IP length of each packet, 28 (IPv4 + UDP headers) to
	// 65535 bytes.
	Size int
	// Dir is "up" (client to server) or "down"; empty means up.
	Dir string
	// Start is when the first packet is sent.
	Start time.Duration
	// Count is the number of packets to send; 0 means no limit.
	Count int64
	// TOS is the DSCP part of the TOS byte (DSCP << 2); its two low bits
	// must be 0, because they are the ECN field, which ECN sets.
	TOS uint8
	// ECN is the ECN codepoint of every packet.
	ECN packet.ECN
	// Src and Dst are the packets' IPv4 source and destination as sent;
	// the zero Addr means the simulated client's (10.0.0.2) or server's
	// (10.0.1.2) address, by the flow's direction. Disciplines that
	// isolate hosts (cake's srchost, dsthost, triple-isolate) tell flows
	// of different hosts apart by them. A flow crosses the access links
	// of the hosts whose addresses they are (Config.Clients, Servers),
	// or of c1 and s1 for addresses of no host.
	Src, Dst netip.Addr
	// SrcHost and DstHost, when N is not 0, name the sending and the
	// receiving host of the dumbbell instead (src=c2 dst=s1), and so
	// their addresses and access links: a client and a server, the
	// client sending for dir=up.
	SrcHost, DstHost link.Host
}

// Poisson is a flow with exponentially distributed gaps between packets
// (a Poisson process) of mean Size/Rate, so its mean rate is Rate; the
// first packet is sent one random gap after Start. The fields mean what
// CBR's do. Its randomness is seeded by Config.Seed and the flow's index.
type Poisson CBR

func (c CBR) base() CBR       { return c }
func (CBR) poisson() bool     { return false }
func (p Poisson) base() CBR   { return CBR(p) }
func (Poisson) poisson() bool { return true }

// String returns the flow in ParseFlow's syntax, with exact units.
func (c CBR) String() string { return format("cbr", c) }

// String returns the flow in ParseFlow's syntax, with exact units.
func (p Poisson) String() string { return format("poisson", CBR(p)) }

// dir returns 0 for up and 1 for down.
func (c CBR) dir() int {
	if c.Dir == "down" {
		return 1
	}
	return 0
}

// validate checks the parameters, naming the ParseFlow key to fix.
func (c CBR) validate() error {
	switch {
	case c.Rate == 0:
		return fmt.Errorf("rate is 0; give rate=RATE, e.g. rate=10mbit")
	case c.Size < 28 || c.Size > 65535:
		return fmt.Errorf("size=%d is outside 28..65535 bytes (an IPv4/UDP packet); give e.g. size=1500", c.Size)
	case c.Dir != "" && c.Dir != "up" && c.Dir != "down":
		return fmt.Errorf("dir=%q: use dir=up or dir=down", c.Dir)
	case c.Start < 0:
		return fmt.Errorf("start=%v is negative; give a time from the start of the run, e.g. start=1s", c.Start)
	case c.Count < 0:
		return fmt.Errorf("count=%d is negative; give count=N, or leave it out for no limit", c.Count)
	case c.TOS&3 != 0:
		return fmt.Errorf("tos=0x%02x sets the ECN bits; give the DSCP part only (tos=0x%02x) and ecn=ect0|ect1|notect", c.TOS, c.TOS&^3)
	case c.ECN > packet.CE:
		return fmt.Errorf("ecn=%d is not a codepoint; use ecn=ect0, ect1, notect or ce", c.ECN)
	case c.Src.IsValid() && !c.Src.Is4():
		return fmt.Errorf("src=%v is not an IPv4 address; the simulated packets are IPv4: give e.g. src=10.0.0.3", c.Src)
	case c.Dst.IsValid() && !c.Dst.Is4():
		return fmt.Errorf("dst=%v is not an IPv4 address; the simulated packets are IPv4: give e.g. dst=10.0.1.3", c.Dst)
	case c.Src.IsValid() && c.SrcHost.N != 0, c.Dst.IsValid() && c.DstHost.N != 0:
		return fmt.Errorf("a flow names its hosts or gives their addresses, not both: keep src=HOST dst=HOST or src=ADDR dst=ADDR")
	}
	up := c.Dir != "down"
	for _, h := range []struct {
		key, role string
		host      link.Host
		server    bool // what the host must be
	}{{"src", "sender", c.SrcHost, !up}, {"dst", "receiver", c.DstHost, up}} {
		if h.host.N == 0 || h.host.Server == h.server {
			continue
		}
		want, other := "a client (c1, c2, ...)", "down"
		if h.server {
			want = "a server (s1, s2, ...)"
		}
		if !up {
			other = "up"
		}
		return fmt.Errorf("%s=%s: the %s of a dir=%s flow is %s; name one, or give dir=%s",
			h.key, h.host, h.role, c.dirName(), want, other)
	}
	return nil
}

// dirName returns "up" or "down".
func (c CBR) dirName() string {
	if c.Dir == "down" {
		return "down"
	}
	return "up"
}

// ParseFlow parses a flow description:
//
//	cbr rate=RATE size=BYTES [dir=up|down] [start=T] [count=N] [tos=0xNN] [ecn=ect0|ect1|notect|ce] [src=A.B.C.D] [dst=A.B.C.D]
//	poisson rate=RATE size=BYTES [...the same options]
//
// RATE is a number with tc's units, case-insensitive: bit (also a bare
// number), kbit, mbit, gbit, tbit in bits per second with steps of 1000
// (kibit … with steps of 1024), and bps, kbps, mbps, gbps, tbps in bytes
// per second; or with iperf's k, m, g, t in bits per second
// (tcspec.ParseRate). T is a number with
// ns, us, ms or s. tos is decimal or 0x hex. count is at least 1. The
// defaults are dir=up, start=0s, no count limit, tos=0 and ecn=notect.
// src and dst are the packets' IPv4 source and destination as sent (so
// for dir=down, src is a server-side address); by default the simulated
// client's 10.0.0.2 and server's 10.0.1.2. Either may name a host of the
// dumbbell instead, c1..c16 or s1..s16 (link.ParseHost): the flow then
// crosses that host's access link, with its address (10.0.0.N+1 for
// client N, 10.0.1.N+1 for server N), and a flow from a server is down
// unless dir says otherwise.
func ParseFlow(s string) (Flow, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty flow; write e.g. \"cbr rate=10mbit size=1500\"")
	}
	kind := strings.ToLower(fields[0])
	if kind != "cbr" && kind != "poisson" {
		return nil, fmt.Errorf("flow %s: unknown kind %s; use cbr or poisson", tcspec.Quote(s), tcspec.Quote(fields[0]))
	}
	c := CBR{Dir: "up"}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		key = strings.ToLower(key)
		if !ok || val == "" {
			return nil, fmt.Errorf("flow %s: %s is not KEY=VALUE; write e.g. rate=10mbit", tcspec.Quote(s), tcspec.Quote(f))
		}
		if seen[key] {
			return nil, fmt.Errorf("flow %s: %s is given twice; keep one", tcspec.Quote(s), tcspec.Quote(key))
		}
		seen[key] = true
		if err := c.set(key, val); err != nil {
			return nil, fmt.Errorf("flow %s: %s: %w", tcspec.Quote(s), tcspec.Quote(f), err)
		}
	}
	if !seen["dir"] && (c.SrcHost.Server || c.DstHost.N != 0 && !c.DstHost.Server) {
		// Named hosts say the direction: from a server is down.
		c.Dir = "down"
	}
	for _, k := range []string{"rate", "size"} {
		if !seen[k] {
			return nil, fmt.Errorf("flow %s: %s= is missing; e.g. %q", tcspec.Quote(s), k, kind+" rate=10mbit size=1500")
		}
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("flow %s: %w", tcspec.Quote(s), err)
	}
	if kind == "poisson" {
		return Poisson(c), nil
	}
	return c, nil
}

func (c *CBR) set(key, val string) error {
	switch key {
	case "rate":
		r, err := parseRate(val)
		if err != nil {
			return err
		}
		c.Rate = r
	case "size":
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("not a whole number of bytes; give e.g. size=1500")
		}
		c.Size = n
	case "dir":
		c.Dir = strings.ToLower(val)
		if c.Dir != "up" && c.Dir != "down" {
			return fmt.Errorf("use dir=up or dir=down")
		}
	case "start":
		d, err := tcspec.ParseTime(val)
		if err != nil {
			return err
		}
		c.Start = d
	case "count":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("not a non-negative whole number; give e.g. count=1000")
		}
		if n == 0 {
			return fmt.Errorf("a flow of no packets sends nothing; give count=N with N >= 1, or leave count out for no limit")
		}
		c.Count = n
	case "tos":
		n, err := strconv.ParseUint(val, 0, 8)
		if err != nil {
			return fmt.Errorf("not a byte; give e.g. tos=0xb8 (decimal or 0x hex)")
		}
		c.TOS = uint8(n)
	case "ecn":
		switch strings.ToLower(val) {
		case "notect", "not-ect":
			c.ECN = packet.NotECT
		case "ect0", "ect(0)":
			c.ECN = packet.ECT0
		case "ect1", "ect(1)":
			c.ECN = packet.ECT1
		case "ce":
			c.ECN = packet.CE
		default:
			return fmt.Errorf("use ecn=ect0, ect1, notect or ce")
		}
	case "src", "dst":
		a, err := netip.ParseAddr(val)
		if ch := val[0] | 0x20; err != nil && (ch == 'c' || ch == 's') {
			h, err := link.ParseHost(val)
			if err != nil {
				return fmt.Errorf("%w, or an IPv4 address", err)
			}
			if key == "src" {
				c.SrcHost = h
			} else {
				c.DstHost = h
			}
			return nil
		}
		if err != nil || !a.Is4() {
			return fmt.Errorf("not an IPv4 address; give e.g. %s=10.0.0.3, or a host, c1..c%d or s1..s%d", key, link.MaxHosts, link.MaxHosts)
		}
		if key == "src" {
			c.Src = a
		} else {
			c.Dst = a
		}
	default:
		return fmt.Errorf("unknown key; the keys are rate, size, dir, start, count, tos, ecn, src, dst")
	}
	return nil
}

// parseRate parses a rate (tcspec.ParseRate: tc's units or iperf's
// letters) into bytes per second, rounded to nearest.
func parseRate(s string) (qdisc.Rate, error) {
	bits, err := tcspec.ParseRate(s)
	if err != nil {
		return 0, err
	}
	bytes := math.Round(bits / 8)
	if !(bytes >= 1) || bytes > math.MaxInt64 {
		return 0, fmt.Errorf("rate must be at least 8bit (1 byte/s) and finite")
	}
	return qdisc.Rate(bytes), nil
}

// format prints a flow in ParseFlow's syntax, with exact units.
func format(kind string, c CBR) string {
	var b strings.Builder
	b.WriteString(kind)
	b.WriteString(" rate=")
	b.WriteString(formatRate(c.Rate))
	fmt.Fprintf(&b, " size=%d", c.Size)
	if c.Dir == "" {
		b.WriteString(" dir=up")
	} else {
		b.WriteString(" dir=" + c.Dir)
	}
	if c.Start != 0 {
		b.WriteString(" start=" + formatTime(c.Start))
	}
	if c.Count != 0 {
		fmt.Fprintf(&b, " count=%d", c.Count)
	}
	if c.TOS != 0 {
		fmt.Fprintf(&b, " tos=0x%02x", c.TOS)
	}
	switch c.ECN {
	case packet.ECT0:
		b.WriteString(" ecn=ect0")
	case packet.ECT1:
		b.WriteString(" ecn=ect1")
	case packet.CE:
		b.WriteString(" ecn=ce")
	}
	if c.Src.IsValid() {
		b.WriteString(" src=" + c.Src.String())
	}
	if c.Dst.IsValid() {
		b.WriteString(" dst=" + c.Dst.String())
	}
	if c.SrcHost.N != 0 {
		b.WriteString(" src=" + c.SrcHost.String())
	}
	if c.DstHost.N != 0 {
		b.WriteString(" dst=" + c.DstHost.String())
	}
	return b.String()
}

// formatRate prints a rate in the largest bit unit that holds it exactly.
func formatRate(r qdisc.Rate) string {
	bits := uint64(r) * 8
	for _, u := range []struct {
		name  string
		scale uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bits%u.scale == 0 {
			return strconv.FormatUint(bits/u.scale, 10) + u.name
		}
	}
	return strconv.FormatUint(bits, 10) + "bit"
}

// formatTime prints a duration in the largest unit that holds it exactly.
func formatTime(d time.Duration) string {
	for _, u := range []struct {
		name  string
		scale time.Duration
	}{{"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.scale == 0 {
			return strconv.FormatInt(int64(d/u.scale), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
