package testrun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"wanlab/lab"
	"wanlab/results"
)

// This file holds the custom test's parts that need no namespace: the
// placeholders of its commands, the bounded capture of their output, and
// the series of the user's flows as the router saw them.

// expandCommand replaces the placeholders of a custom command run in host
// r: @peer and @peer6 (the other host's addresses, as `wanlab exec`
// replaces them), @port and @duration. A placeholder followed by a letter,
// digit or '_' is left alone, so that @portal stays as written.
func expandCommand(cmd string, info lab.Info, r lab.Role, port int, load time.Duration) string {
	cmd = lab.ExpandPeer([]string{cmd}, info, r)[0]
	cmd = replaceWord(cmd, "@port", strconv.Itoa(port))
	return replaceWord(cmd, "@duration", durationWord(load))
}

// durationWord writes a duration in seconds as programs take it: "10",
// "2.5".
func durationWord(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// namesPort reports whether a command uses the @port placeholder.
func namesPort(cmd string) bool { return replaceWord(cmd, "@port", "") != cmd }

// replaceWord replaces every word in s (not followed by a letter, digit
// or '_') with value.
func replaceWord(s, word, value string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, word)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(word):]
		if rest != "" && isWordByte(rest[0]) {
			b.WriteString(word)
		} else {
			b.WriteString(value)
		}
		s = rest
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// capture is an output stream of a user's command: it keeps the first and
// the last half of its limit in bytes and counts everything, so that a
// program printing gigabytes neither blocks on a full pipe nor fills the
// results. It is safe for concurrent use.
type capture struct {
	mu    sync.Mutex
	half  int
	head  []byte
	tail  []byte // a ring of up to half bytes once head is full
	pos   int    // where the ring's oldest byte is, once it is full
	total int64
}

func newCapture(limit int) *capture { return &capture{half: limit / 2} }

// Write keeps what fits and counts the rest; it never fails.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.half - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= c.half {
		// What came before in the ring is overwritten whole.
		c.tail = append(c.tail[:0], p[len(p)-c.half:]...)
		c.pos = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(c.tail) < c.half {
			k := min(c.half-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % c.half
		p = p[k:]
	}
	return n, nil
}

// text returns what was kept, in order: the whole output when it fitted,
// else its first and last halves with a line between them that says how
// much was left out. total is how many bytes were written.
func (c *capture) text() (text string, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := append(slices.Clone(c.tail[c.pos:]), c.tail[:c.pos]...)
	kept := int64(len(c.head) + len(tail))
	if kept == c.total {
		return string(c.head) + string(tail), c.total
	}
	return string(c.head) + fmt.Sprintf("\n[wanlab: %d bytes left out]\n", c.total-kept) + string(tail), c.total
}

// lastLine returns the last non-empty line of a command's output, cut to
// 300 bytes, for an error message.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n\r\t "), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}

// ownFlows says which of the router's flows are wanlab's own probes
// rather than the user's.
type ownFlows struct {
	tuples   map[flowKey]bool
	icmpIDs  []uint16
	hasProbe bool
}

// mine reports whether k is one of wanlab's probes: a recorded UDP probe
// socket pair (either way), or an ICMP echo stream of a probe's
// identifier, which the router uses as both ports.
func (o *ownFlows) mine(k flowKey) bool {
	if o.tuples[k] {
		return true
	}
	if k.proto == "icmp" || k.proto == "icmpv6" {
		return k.src.Port() == k.dst.Port() && slices.Contains(o.icmpIDs, k.src.Port())
	}
	return false
}

// ownFlowsOf collects the probes' flows from the specs.
func ownFlowsOf(specs []flowSpec) *ownFlows {
	o := &ownFlows{tuples: map[flowKey]bool{}}
	for _, sp := range specs {
		if sp.icmpID != nil {
			o.icmpIDs = append(o.icmpIDs, *sp.icmpID)
		}
		if sp.sockets == nil {
			continue
		}
		for _, c := range sp.sockets.connected() {
			o.tuples[flowKey{"udp", c[0], c[1]}] = true
			o.tuples[flowKey{"udp", c[1], c[0]}] = true
		}
	}
	return o
}

// customSeries makes the custom test's series from the router's readings:
// for each direction, one flow per 5-tuple of the user's, in order of first
// appearance ("Custom upload::1", ...), whose main series is the transport
// payload the router delivered per step, in Mbit/s, with the router's
// per-flow series (drops, queueing delay, ...) as its own; then "Custom
// upload" and "Custom download", that payload summed over the user's flows
// of each direction, and "Custom totals", both directions together.
// Every rate series covers the whole run from T0 (0 where nothing was
// delivered), and the summaries the load. It returns the flows and the
// top-level series, the flows' main series first.
func (b *docBuilder) customSeries(rec *routerRecord, own *ownFlows, firstID int) ([]results.Flow, []results.Series) {
	var (
		flows  []results.Flow
		series []results.Series
		sums   []results.Series
	)
	if rec == nil || len(rec.steps) == 0 {
		return nil, nil
	}
	last := rec.steps[len(rec.steps)-1].K
	for _, dir := range []string{"up", "down"} {
		word := map[string]string{"up": "upload", "down": "download"}[dir]
		pick := func(v routerView) dirView {
			if dir == "down" {
				return v.Down
			}
			return v.Up
		}
		// The user's flows, in order of first appearance.
		var keys []flowKey
		seen := map[flowKey]bool{}
		for _, st := range rec.steps {
			for _, k := range pick(st.View).Order {
				if !seen[k] && !own.mine(k) && k != (flowKey{}) {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
		total := make([]float64, last+1)
		for i, k := range keys {
			label := fmt.Sprintf("Custom %s::%d", word, i+1)
			main := b.series(label, "Mbits/s")
			base := pick(rec.base).Flows[k].Payload
			var ks []int
			var counts []int64
			for _, st := range rec.steps {
				c, ok := pick(st.View).Flows[k]
				if !ok {
					c.Payload = base
				}
				ks = append(ks, st.K)
				counts = append(counts, int64(sub(c.Payload, base)))
			}
			// From grid point 0 on, so that sample j is grid point j.
			b.rateSteps(&main, -1, ks, counts)
			for j, smp := range main.Samples {
				total[j] += smp.V
			}
			series = append(series, main)
			flows = append(flows, results.Flow{
				ID: firstID + len(flows), Label: label, Direction: dir, Protocol: k.proto,
				FiveTuple: k.proto + " " + k.src.String() + " > " + k.dst.String(),
				Series:    b.router(label, rec, dir, k.proto, k.src, k.dst),
			})
		}
		sum := b.series("Custom "+word, "Mbits/s")
		for j, v := range total {
			sum.Samples = append(sum.Samples, results.Sample{T: b.gridTime(j), V: v})
		}
		sums = append(sums, sum)
	}
	totals := b.series("Custom totals", "Mbits/s")
	for j := range sums[0].Samples {
		totals.Samples = append(totals.Samples, results.Sample{T: sums[0].Samples[j].T, V: sums[0].Samples[j].V + sums[1].Samples[j].V})
	}
	return flows, append(append(sums, totals), series...)
}
